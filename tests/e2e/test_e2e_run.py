"""End to end on real components: perfci starts a throwaway MariaDB on a free
loopback port, runs real sysbench, and writes the result file."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import TINY_STEPS, measuring, result_files, run_perfci, server_processes, write_tiny

pytestmark = [pytest.mark.e2e, pytest.mark.alone]


# ---------------------------------------------------------------- the smoke run of rebuild-after-delete

def test_smoke_result_has_both_phases_with_throughput_and_intervals(smoke_result):
    res = smoke_result["result"]
    # --json: the result file and its run-level metrics, for a script
    [entry] = smoke_result["json"]["results"]
    assert smoke_result["json"]["schema"] == "perfci.run/1" and entry["path"] == str(smoke_result["path"])
    assert entry["id"] == res["id"] and entry["valid"] is True
    assert entry["metrics"]["before.tps"] == res["phases"]["before"]["metrics"]["tps"]
    assert res["schema"] == "perfci.result/2" and res["status"] == "ok"
    assert list(res["phases"]) == ["before", "after"]
    for name, phase in res["phases"].items():
        assert phase["metrics"]["qps"] > 0 and phase["metrics"]["qps_write"] > 0, name
        assert len(phase["intervals"]) >= 5, name
        assert phase["sysbench_version"]
        assert "--skip_trx=on" in phase["command"] and "--index_updates=5" in phase["command"]
        # fixed work: exactly the seeded 3000 transactions, the 300 s cap a guard
        assert phase["metrics"]["events"] == phase["transactions_target"] == 3000, name
        assert (phase["bound"], phase["rand_seed"], phase["time_s"]) == ("transactions", 1, 300), name
        assert "--events=3000" in phase["command"] and "--rand-seed=1" in phase["command"]
        # the tail from sysbench's histogram: 3000 transactions give p99, too few for p99.9
        assert "--histogram=on" in phase["command"]
        assert phase["metrics"]["latency_ms_p99"] >= phase["metrics"]["latency_ms_p95"] > 0, name
        assert phase["metrics"].get("latency_ms_p99_9") is None, name
        assert set(phase["host_cpu"]) == {"host", "server", "client", "perfci", "kernel", "others"}
    assert set(res["validity"]) == {"valid", "reasons"}


def test_smoke_rebuild_shrinks_the_ibd_and_counters_move(smoke_result):
    res = smoke_result["result"]
    sizes = {s["name"]: s["sizes_after"]["sbtest1"]["file_size"] for s in res["steps"]}
    assert sizes["rebuild"] < sizes["delete-half"]
    deleted = next(s for s in res["steps"] if s["name"] == "delete-half")
    assert 0.4 < deleted["rows_deleted"] / 200_000 < 0.6
    for phase in res["phases"].values():
        assert phase["counters"]["innodb_metrics"]["index_page_splits"] > 0
        assert phase["counters"]["innodb_cmp"]["compress_ops"] > 0
        assert phase["metrics"]["index_page_splits_per_txn"] > 0
    assert {(h["metric"], h["numerator"], h["denominator"]) for h in res["headline"]} >= {("qps_write", "after", "before")}
    assert next(h for h in res["headline"] if h["metric"] == "qps_write")["value"] > 0
    ddl = next(s for s in res["steps"] if s["name"] == "rebuild")
    assert ddl["statements"][0]["sql"] == "ALTER TABLE sbtest1 ENGINE=InnoDB" and ddl["duration_s"] > 0


def test_smoke_records_context_and_effective_config(smoke_result):
    res = smoke_result["result"]
    srv = res["server"]
    assert srv["flavor"] == "mariadb" and srv["version"].startswith("10.")
    eff = srv["effective_config"]
    assert eff["innodb_buffer_pool_size"] == str(512 << 20)      # the smoke profile's value
    assert eff["innodb_log_file_size"] == str(512 << 20)         # mapped from innodb_redo_log_capacity
    assert eff["innodb_flush_log_at_trx_commit"] == "0" and eff["innodb_adaptive_hash_index"] == "OFF"
    skipped = {n["option"] for n in res["notes"] if n["action"] == "skipped"}
    assert {"innodb_use_fdatasync", "default_authentication_plugin"} <= skipped
    assert res["scenario"]["hash"].startswith("sha256:") and res["scenario"]["profile"] == "smoke"
    assert res["scenario"]["resolved"]["dataset"]["rows"] == 200_000
    host = res["host"]
    assert host["cpus"] >= 1 and host["memory_bytes"] > 0 and host["cpu_model"] and host["kernel"]
    assert host["datadir_filesystem"]["type"] != "unknown"
    assert res["harness"]["git_sha"] and "sysbench" in res["harness"]["sysbench"]
    assert res["reproduce"] == "perfci run rebuild-after-delete --profile smoke --server local"


def test_smoke_prints_summary_and_cleans_up(smoke_result):
    out = smoke_result["proc"].stdout
    assert "| metric | before | after | after/before |" in out and "| qps write |" in out
    assert "Headline:** qps_write after/before" in out
    assert smoke_result["path"].with_suffix(".md").read_text().startswith("### rebuild-after-delete")
    assert "measure before" in smoke_result["proc"].stderr  # progress with step names
    assert list(smoke_result["workdir"].iterdir()) == []   # datadir removed
    assert server_processes(str(smoke_result["workdir"])) == []


# ---------------------------------------------------------------- config overrides and bad input

def test_config_override_reaches_the_running_server(real_server_tools, tmp_path):
    scenario = write_tiny(tmp_path)
    out = tmp_path / "out"
    proc = run_perfci("run", str(scenario), "--out", str(out), "--workdir", str(tmp_path),
                      "--config", "innodb_flush_log_at_trx_commit=1")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(result_files(out)[0].read_text())
    assert res["server"]["effective_config"]["innodb_flush_log_at_trx_commit"] == "1"
    assert res["server"]["config"]["overrides"] == {"innodb_flush_log_at_trx_commit": "1"}
    assert "--config innodb_flush_log_at_trx_commit=1" in res["reproduce"]


def test_unknown_server_option_fails_before_any_work(real_server_tools, tmp_path):
    proc = run_perfci("run", str(write_tiny(tmp_path)), "--out", str(tmp_path / "out"),
                      "--workdir", str(tmp_path / "work"), "--config", "innodb_no_such_option=1")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(r"error: --config: server option 'innodb_no_such_option' is not known to "
                        r"mariadb-10\.\d+\.\d+; nothing was run", lines[0])
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


def test_unknown_profile_is_one_line_and_no_result(tmp_path):
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "huge", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("unknown profile 'huge'; allowed: smoke, nightly, seed")
    assert len(proc.stderr.strip().splitlines()) == 1 and result_files(tmp_path) == []


def test_bad_scenario_file_is_one_line_and_no_result(tmp_path):
    bad = write_tiny(tmp_path, steps=TINY_STEPS.replace("kind: apply_layout", "kind: apply_layuot"))
    proc = run_perfci("run", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {bad}: field steps[1]: unknown step kind 'apply_layuot'; "
                                   "allowed: prepare, apply_layout, delete_random, sql, measure")
    assert not (tmp_path / "out").exists()


def test_missing_server_binary_gives_install_hint(tmp_path):
    proc = run_perfci("run", "rebuild-after-delete", "--out", str(tmp_path),
                      env={"PERFCI_SERVER_PATH": str(tmp_path)})
    assert proc.returncode == 2
    assert "no server binary (mariadbd or mysqld)" in proc.stderr and "apt-get install mariadb-server" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_server_that_fails_to_start_shows_error_log_tail(real_server_tools, tmp_path):
    proc = run_perfci("run", str(write_tiny(tmp_path)), "--out", str(tmp_path / "out"),
                      "--workdir", str(tmp_path / "work"), "--config", "init_file=/nonexistent/init.sql")
    assert proc.returncode == 3
    assert "error: the server exited during start" in proc.stderr
    assert "  | " in proc.stderr and "/nonexistent/init.sql" in proc.stderr  # the error log's own words
    assert not (tmp_path / "out").exists()
    assert server_processes(str(tmp_path / "work")) == []


def test_sysbench_failure_mid_run_shows_its_output_and_stops_server(real_server_tools, tmp_path):
    steps = TINY_STEPS.replace("  - kind: measure", "  - kind: sql\n    name: break\n    statements: "
                               "['SELECT 1', 'DROP TABLE {table}']\n  - kind: measure")
    proc = run_perfci("run", str(write_tiny(tmp_path, steps=steps)), "--out", str(tmp_path / "out"),
                      "--workdir", str(tmp_path / "work"))
    assert proc.returncode == 3
    assert "error: sysbench oltp_write_only run failed" in proc.stderr
    assert "doesn't exist" in proc.stderr  # sysbench's own message about the dropped table
    assert "done stop server at once (the run failed" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert server_processes(str(tmp_path / "work")) == [] and list((tmp_path / "work").iterdir()) == []


def test_ctrl_c_during_a_measured_phase_shuts_down_and_writes_nothing(real_server_tools, tmp_path):
    scenario = write_tiny(tmp_path, time=60)
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out", work) as (proc, err_lines):
        time.sleep(3)  # well inside the 60 s phase
        assert server_processes(str(work)), "the server should be running during the measured phase"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    err = "".join(err_lines)
    assert proc.returncode == 130, err
    assert "interrupted: the server was shut down and no result was written" in err
    assert server_processes(str(work)) == [] and list(work.iterdir()) == []
    assert not (tmp_path / "out").exists()


def test_console_script_help_is_useful():
    exe = shutil.which("perfci")
    assert exe, "pip install -e . provides the perfci console script"
    out = subprocess.run([exe, "run", "--help"], capture_output=True, text=True).stdout
    for needle in ("--profile", "--server", "--config NAME=VALUE", "--config-file", "--out", "--repeat",
                   "perfci run rebuild-after-delete --profile smoke", "Exit codes"):
        assert needle in out
    listing = subprocess.run([exe, "list"], capture_output=True, text=True).stdout
    assert "rebuild-after-delete" in listing and "--profile smoke" in listing and "min" in listing


def test_two_runs_on_one_host_the_second_refuses_naming_the_first(real_server_tools, tmp_path):
    """One benchmark per host: while a real run measures, a second `perfci run` refuses
    within seconds, naming the first; the first is then interrupted and cleans up."""
    scenario = write_tiny(tmp_path, time=60)
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out1", work) as (first, _):
        started = time.monotonic()
        second = run_perfci("run", str(scenario), "--out", str(tmp_path / "out2"), "--workdir", str(tmp_path / "w2"))
        elapsed = time.monotonic() - started
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    assert second.returncode == 3, second.stderr
    assert re.match(rf"error: this host is busy: the perfci host lock \S+ is held by pid {first.pid} "
                    rf"\(perfci run {re.escape(str(scenario))} ", second.stderr), second.stderr
    assert elapsed < 5, f"refusing took {elapsed:.1f} s"
    assert not (tmp_path / "out2").exists() and not (tmp_path / "w2").exists()
    assert server_processes(str(work)) == []
