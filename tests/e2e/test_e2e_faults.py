"""Faults a real runner meets, on real servers: a server that dies mid-phase, a disk
that fills up, and the runner's cancel sequence. Each must leave no process, no
half-written file and a clear exit code."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import measuring, run_perfci, server_pids, server_processes, write_tiny
from factories import make_result, write_results


@contextlib.contextmanager
def small_disk(path: Path, size: str):
    """A tmpfs of `size` at `path`: a disk that really fills up (root, as on this runner)."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)


def fill(disk: Path) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={disk / 'filler'}", "bs=1M"], capture_output=True)


def test_server_killed_mid_phase_is_exit_3_naming_it_and_leaves_nothing(real_server_tools, tmp_path):
    scenario = write_tiny(tmp_path, time=60)
    work, out = tmp_path / "work", tmp_path / "out"
    with measuring(scenario, out, work) as (proc, err_lines):
        time.sleep(2)
        [server] = server_pids(str(work))
        subprocess.run(["kill", "-KILL", str(server)], check=True)
        proc.wait(timeout=120)
    err = "".join(err_lines)
    assert proc.returncode == 3, err
    assert "error: the server died during the run (killed by signal 9 (SIGKILL)); its error log ends with:" in err, err
    assert server_processes(str(work)) == [] and list(work.iterdir()) == []
    assert not out.exists()


def test_runner_cancel_sequence_cleans_up_before_the_kill(real_server_tools, tmp_path):
    """actions/runner cancels a step by signalling the step's shell only: SIGINT, SIGTERM
    7.5 s later, SIGKILL of the whole tree 2.5 s after that. The step runs perfci through
    perfci_run (scripts/step-signals.sh), as the workflows do, so the signals reach it:
    the clean-up must finish inside those 10 s."""
    scenario = write_tiny(tmp_path, time=60)
    work, out = tmp_path / "work", tmp_path / "out"
    with measuring(scenario, out, work, step_shell=True) as (shell, err_lines):
        time.sleep(2)
        cancelled = time.monotonic()
        shell.send_signal(signal.SIGINT)  # to the shell's pid only, as the runner does
        shell.send_signal(signal.SIGTERM)
        try:
            shell.wait(timeout=10 - (time.monotonic() - cancelled))
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)  # what the runner does at 10 s: the whole tree
            shell.wait()
        took = time.monotonic() - cancelled
    err = "".join(err_lines)
    assert shell.returncode == 130, err  # perfci's own status, through the step's shell
    # (a SIGTERM that lands inside the clean-up is ignored: tests/run/test_cancellation.py)
    assert "done stop server at once (interrupted" in err
    assert "interrupted: the server was shut down and no result was written" in err
    assert took < 10, f"the clean-up took {took:.1f} s: the runner would have killed it"
    assert server_processes(str(work)) == [] and list(work.iterdir()) == []
    assert not out.exists()


def test_a_disk_that_fills_mid_phase_is_exit_3_naming_it_and_leaves_nothing(real_server_tools, tmp_path):
    """InnoDB on a full disk waits for space, also at shutdown: the run must not wait
    with it (it used to, up to 10 min), and must say the disk is full."""
    scenario = write_tiny(tmp_path, time=60)
    out = tmp_path / "out"
    with small_disk(tmp_path / "disk", "400m") as disk, measuring(scenario, out, disk) as (proc, err_lines):
        fill(disk)
        proc.wait(timeout=120)
        err = "".join(err_lines)
        assert proc.returncode == 3, err
        assert f"-- the disk of {disk}/perfci-" in err and "is full (" in err, err
        assert "done stop server at once (the run failed" in err
        assert server_processes(str(disk)) == []
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]
    assert not out.exists()


def test_a_history_append_on_a_full_disk_loses_no_night_and_names_the_file(tmp_path):
    results = tmp_path / "results"
    write_results(results, [make_result(tps=1000.0 + i) for i in range(3)])
    with small_disk(tmp_path / "disk", "1m") as disk:
        history = disk / "h"
        first = run_perfci("history", "append", str(results / sorted(p.name for p in results.glob("*.json"))[0]),
                           "--history", str(history))
        assert first.returncode == 0, first.stderr
        [case_file] = history.rglob("*.jsonl")
        before = case_file.read_bytes()
        fill(disk)
        full = run_perfci("history", "append", str(results), "--history", str(history))
        assert full.returncode == 3, full.stderr
        assert full.stderr.startswith(f"error: cannot write {case_file}: No space left on device; "
                                      "its earlier lines are unchanged"), full.stderr
        after = case_file.read_bytes()  # a line may still fit in the file's last page
        assert after.startswith(before) and after.endswith(b"\n")
        assert all(json.loads(line) for line in after.splitlines())  # no torn line
        (disk / "filler").unlink()
        again = run_perfci("history", "append", str(results), "--history", str(history))
        assert again.returncode == 0, again.stderr
        assert len(case_file.read_text().splitlines()) == 3


def test_a_result_on_a_full_disk_is_exit_3_and_never_half_written(real_server_tools, tmp_path):
    scenario = write_tiny(tmp_path, transactions=200)
    with small_disk(tmp_path / "disk", "1m") as disk:
        fill(disk)
        proc = run_perfci("run", str(scenario), "--out", str(disk / "out"), "--workdir", str(tmp_path / "work"))
        assert proc.returncode == 3, proc.stderr
        assert "No space left on device" in proc.stderr and "internal error" not in proc.stderr, proc.stderr
        assert not list((disk / "out").glob("*.json")) if (disk / "out").exists() else True
        assert not list(disk.rglob(".*.tmp"))
    assert server_processes(str(tmp_path / "work")) == []
