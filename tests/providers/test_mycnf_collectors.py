"""my.cnf input, and counter deltas / per-transaction metrics."""

import pytest

from perfci.providers.mycnf import parse_config_file, parse_override, render
from perfci.run.collectors import delta, derived
from perfci.util.errors import BadInput


def test_parse_override():
    req = parse_override("innodb_flush_log_at_trx_commit=1")
    assert (req.name, req.value, req.origin) == ("innodb_flush_log_at_trx_commit", "1", "override")
    assert parse_override("skip-log-bin").value is None
    with pytest.raises(BadInput, match="expected NAME=VALUE"):
        parse_override("=1")
    with pytest.raises(BadInput, match="set by the harness"):
        parse_override("datadir=/var/lib/mysql")


def test_parse_config_file_reads_server_sections_only(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nport=1\n[mysqld]\n# comment\ninnodb_buffer_pool_size = 2G\nskip-log-bin\n"
                   "[mariadbd]\ninnodb_io_capacity=2000 # inline\n")
    reqs = parse_config_file(cnf)
    assert [(r.name, r.value) for r in reqs] == [("innodb_buffer_pool_size", "2G"), ("skip-log-bin", None),
                                                 ("innodb_io_capacity", "2000")]
    cnf.write_text("innodb_buffer_pool_size=1G\n")
    with pytest.raises(BadInput, match=r"my.cnf:1: option outside a section"):
        parse_config_file(cnf)
    with pytest.raises(BadInput, match="cannot read"):
        parse_config_file(tmp_path / "missing.cnf")


def test_render_writes_flags_and_on_off():
    text = render({"port": 3307}, {"performance_schema": False, "skip_log_bin": None, "x": 1})
    assert "port = 3307" in text and "performance_schema = OFF" in text and "\nskip_log_bin\n" in text


def test_delta_and_per_transaction_metrics():
    before = {"innodb_metrics": {"index_page_splits": 10, "index_page_merge_attempts": 3, "buffer_pool_size": 5},
              "innodb_cmp": {"8192.compress_ops": 100, "8192.compress_ops_ok": 90, "8192.uncompress_ops": 5,
                             "8192.compress_time": 0, "8192.uncompress_time": 0},
              "global_status": {"Innodb_pages_written": 1000, "Uptime": 5}, "server_cpu_seconds": 1.0}
    after = {"innodb_metrics": {"index_page_splits": 60, "index_page_merge_attempts": 3, "buffer_pool_size": 5},
             "innodb_cmp": {"8192.compress_ops": 300, "8192.compress_ops_ok": 250, "8192.uncompress_ops": 25,
                            "8192.compress_time": 1, "8192.uncompress_time": 0},
             "global_status": {"Innodb_pages_written": 1400, "Uptime": 15}, "server_cpu_seconds": 6.0}
    d = delta(before, after)
    assert d["innodb_metrics"]["index_page_splits"] == 50 and "buffer_pool_size" not in d["innodb_metrics"]
    assert d["innodb_metrics"]["index_page_merge_attempts"] == 0  # key counters stay, even unchanged
    assert d["innodb_cmp"]["compress_ops"] == 200 and d["innodb_cmp"]["compress_ops_ok"] == 160
    assert d["server_cpu_seconds"] == 5.0
    m = derived(d, {"events": 100, "duration_s": 10.0})
    assert m["index_page_splits_per_txn"] == 0.5
    assert m["compress_failures_per_txn"] == 0.4 and m["compress_miss_rate"] == 0.2
    assert m["uncompress_ops_per_txn"] == 0.2 and m["pages_written_per_txn"] == 4.0
    assert m["server_cpu_util"] == 0.5
    assert derived(d, {"events": 0})["index_page_splits_per_txn"] is None


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_newline_in_a_config_value_cannot_add_mycnf_lines(tmp_path):
    """`--config 'x=1\nskip-grant-tables'` would otherwise slip a reserved option past
    the check: refused on the command line, in a config file, in a scenario, and by render."""
    from conftest import run_perfci
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "smoke", "--out", str(tmp_path / "o"),
                      "--config", "innodb_buffer_pool_size=64M\nskip-grant-tables")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("error: --config innodb_buffer_pool_size: control character \\n not allowed in a value "
                           "(a server option is one my.cnf line)\n")
    assert not (tmp_path / "o").exists()
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[mysqld]\ninnodb_buffer_pool_size=64M\x0bskip-grant-tables\n")
    with pytest.raises(BadInput, match=r"my.cnf:2: control character \\x0b not allowed"):
        parse_config_file(cnf)
    with pytest.raises(BadInput, match="control characters are not allowed"):
        render({}, {"innodb_buffer_pool_size": "64M\nskip-grant-tables"})


def test_control_characters_in_scenario_text_are_refused():
    from perfci.model.scenario import parse_scenario
    with pytest.raises(BadInput, match=r"^s.yaml: field description: control character \\x1b not allowed"):
        parse_scenario("name: s\ndescription: \"red \\e[31m\"\n", "s.yaml")
    import yaml
    data = yaml.safe_load(open("scenarios/rebuild-after-delete.yaml"))
    data["server"]["config"]["innodb_buffer_pool_size"] = "64M\nskip-grant-tables"
    with pytest.raises(BadInput, match=r"^s.yaml: field server.config.innodb_buffer_pool_size: control character \\n not "
                                       r"allowed \(a server option is one my.cnf line\)"):
        parse_scenario(yaml.safe_dump(data), "s.yaml")


def test_mysql_8_servers_keep_no_listener_beyond_the_harness_port():
    """MySQL 8.0 loads the X plugin, listening on *:33060: off for MySQL and Percona 8.x,
    untouched where there is none (MariaDB, MySQL 5.7)."""
    from perfci.model.flavor import ServerIdentity, Version
    from perfci.providers.mycnf import loopback_only

    def ident(flavor, version):
        return ServerIdentity(flavor, Version.parse(version), version)
    assert loopback_only(ident("mysql", "8.0.15")) == {"mysqlx": "OFF"}
    assert loopback_only(ident("percona", "8.0.36")) == {"mysqlx": "OFF"}
    assert loopback_only(ident("mysql", "5.7.44")) == {}
    assert loopback_only(ident("mariadb", "11.4.5")) == {}
    with pytest.raises(BadInput, match="set by the harness"):
        parse_override("mysqlx=ON")


@pytest.mark.parametrize("name, owned", [
    ("loose-skip-grant-tables", "skip_grant_tables"), ("loose-bind-address", "bind_address"),
    ("loose_loose-port", "port"), ("skip-grant", "skip_grant_tables"), ("bind-addr", "bind_address"),
    ("disable-skip-networking", "skip_networking"), ("maximum-datadir", "datadir"), ("loose-mysqlx", "mysqlx"),
    # resolving 127.0.0.1 to "localhost" would let TCP match root@localhost; files outside the run
    ("disable-skip-name-resolve", "skip_name_resolve"), ("loose-secure-file-priv", "secure_file_priv"),
    # the parser strips prefixes again and again, in any order, until a name matches
    ("loose-loose-skip-grant-tables", "skip_grant_tables"), ("loose-skip-loose-bind-address", "bind_address"),
    ("skip-loose-skip-name-resolve", "skip_name_resolve"), ("enable-loose-maximum-loose-port", "port"),
    ("disable-disable-skip-networking", "skip_networking")])
def test_a_prefix_or_an_abbreviation_does_not_get_past_the_reserved_options(tmp_path, name, owned):
    """The server strips loose-/enable-/disable-/skip-/maximum- and expands unique
    abbreviations: each way to reach a harness option is refused, wherever it is given."""
    with pytest.raises(BadInput, match=rf"option '{name}' \(it sets {owned}\) is set by the harness"):
        parse_override(f"{name}=0.0.0.0")
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[mysqld]\n{name}=1\n")
    with pytest.raises(BadInput, match=rf"my.cnf:2: option '{name}'"):
        parse_config_file(cnf)


def test_ordinary_options_are_not_taken_for_reserved_ones():
    for name in ("innodb_buffer_pool_size", "loose-innodb_change_buffering", "log_bin",
                 "innodb_log_file_size", "performance_schema", "port_open_timeout"):
        assert parse_override(f"{name}=1").name == name
