"""End to end on real components, asserting behaviour and never a measured effect (run
two at a time by scripts/check, --allow-busy): config overrides reach the server, bad
input is one line before any work, a server that does not start or a sysbench that fails
mid-run stops cleanly, Ctrl-C shuts the server down, the console script's help."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import TINY_STEPS, measuring, result_files, run_perfci, server_processes, write_tiny

pytestmark = pytest.mark.e2e


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
