"""The dsn: provider against a MariaDB the test starts itself (a stand-in for a
server someone else runs): a scenario runs (the tiny one: load, layout, a measured
write phase; the provider's work is the same for any scenario, and rebuild-after-delete's
smoke runs in test_e2e_run.py), and afterwards the server has exactly the databases,
accounts and settings it had before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfci.providers.dsn import DsnServer
from perfci.providers.local import LocalServer
from perfci.providers.spec import parse_spec
from perfci.run.inspect import SqlInspector
from perfci.run.plan import plan_run

from conftest import result_files, run_perfci, write_tiny

# Settings that move on their own (clocks, counters, positions): not ours to compare.
VOLATILE = {"timestamp", "gtid_binlog_pos", "gtid_current_pos", "gtid_binlog_state", "gtid_slave_pos",
            "innodb_buffer_pool_size_auto_min", "last_insert_id", "rand_seed1", "rand_seed2", "warning_count",
            "error_count", "identity", "insert_id", "pseudo_thread_id", "in_transaction"}


def _state(server: LocalServer) -> dict:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES")
        databases = sorted(r[0] for r in cur.fetchall())
        cur.execute("SELECT CONCAT(user, '@', host) FROM mysql.user ORDER BY 1")
        users = [r[0] for r in cur.fetchall()]
        cur.execute("SHOW GLOBAL VARIABLES")
        variables = {k: v for k, v in cur.fetchall() if k not in VOLATILE}
    return {"databases": databases, "users": users, "variables": variables}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("dsn-scenario"))


@pytest.fixture(scope="module")
def running_server(real_server_tools, tiny, tmp_path_factory):
    """A MariaDB started with the scenario's config (what a DBA would point perfci at)."""
    work = tmp_path_factory.mktemp("dsn-server")
    plan = plan_run(str(tiny), "smoke", "local", [], work / "plan")
    server = LocalServer(None, work / "server")
    server.start(plan.config_options)
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'b3nch'")
        cur.execute("GRANT ALL ON *.* TO 'bench'@'127.0.0.1' WITH GRANT OPTION")
        # An account that may create users but not grant: perfci must lend it to sysbench instead.
        cur.execute("CREATE USER 'lender'@'127.0.0.1' IDENTIFIED BY 'l3nd'")
        cur.execute("GRANT ALL ON *.* TO 'lender'@'127.0.0.1'")
    yield server
    server.stop()
    server.cleanup()


def test_dsn_runs_a_scenario_and_leaves_nothing_behind(running_server, tiny, tmp_path):
    before = _state(running_server)
    out = tmp_path / "out"
    spec = f"dsn:mysql://bench@127.0.0.1:{running_server.port}"
    proc = run_perfci("run", str(tiny), "--profile", "smoke", "--server", spec, "--out", str(out),
                      "--quiet", env={"PERFCI_DSN_PASSWORD": "b3nch"}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(result_files(out)[0].read_text())
    assert result["status"] == "ok" and result["server"]["provider"] == "dsn"
    assert result["phases"]["only"]["metrics"]["qps_write"] > 0
    assert "b3nch" not in result_files(out)[0].read_text() and "b3nch" not in proc.stdout + proc.stderr
    actions = [a["action"] for a in result["server"]["dsn_actions"]]
    assert {"created_database", "created_account", "dropped_database", "dropped_account"} <= set(actions)
    assert actions.index("created_account") < actions.index("dropped_account")
    assert _state(running_server) == before


def test_dsn_without_grant_option_lends_its_account_and_creates_none(running_server, tmp_path, monkeypatch):
    """CREATE USER works but GRANT does not: the half-made account is dropped at once
    and sysbench connects as the DSN's own user."""
    before = _state(running_server)
    monkeypatch.setenv("PERFCI_DSN_PASSWORD", "l3nd")
    server = DsnServer(parse_spec(f"dsn:mysql://lender@127.0.0.1:{running_server.port}"), tmp_path / "work")
    server.start({})
    try:
        _, bench = SqlInspector(server).setup()
        assert bench.user == "lender"
        assert [u for u in _state(running_server)["users"] if u.startswith("perfci_")] == []
    finally:
        server.stop()
    assert [a["action"] for a in server.actions] == ["created_database", "own_account_for_sysbench",
                                                     "dropped_database"]
    assert _state(running_server) == before


def test_dsn_refuses_config_that_needs_a_restart_before_any_work(running_server, tiny, tmp_path):
    before = _state(running_server)
    spec = f"dsn:mysql://bench@127.0.0.1:{running_server.port}"
    proc = run_perfci("run", str(tiny), "--server", spec, "--config", "innodb_flush_method=fsync",
                      "--out", str(tmp_path / "out"), "--quiet", env={"PERFCI_DSN_PASSWORD": "b3nch"})
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: --server '{spec}': needs a restart to apply: innodb_flush_method=fsync "
                           "(the server has 'O_DIRECT'")
    assert result_files(tmp_path / "out") == []
    assert _state(running_server) == before


def test_dsn_unreachable_is_one_line(tmp_path):
    proc = run_perfci("run", "rebuild-after-delete", "--server", "dsn:mysql://bench@127.0.0.1:1", "--out", str(tmp_path))
    assert proc.returncode == 3
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("error: --server 'dsn:mysql://bench@127.0.0.1:1': cannot connect: ")
