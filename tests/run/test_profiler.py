"""run/profiler.py: what the explain pass needs to profile, said when it is missing,
and a real test record where perf and inferno are installed."""

from __future__ import annotations

import os
import subprocess

import pytest

from perfci.run import profiler

from conftest import REPO, require_tools


def test_without_perf_or_inferno_the_reason_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo"))
    assert profiler.why_no_profiles() == "perf is not installed (Debian: apt-get install linux-perf)"
    (tmp_path / "perf").write_text("#!/bin/sh\n")
    (tmp_path / "perf").chmod(0o755)
    assert "cargo install inferno --version 0.12.8 --locked" in (profiler.why_no_profiles() or "")
    works, found = profiler.record_check()
    assert not works and "inferno is not installed" in found


@pytest.mark.e2e
def test_perf_records_a_busy_process_here_and_inferno_folds_it():
    """What `perfci doctor` tries: perf attaches to a running process over its control
    FIFO, samples it with cpu-clock, and collapse-perf folds the stacks."""
    if profiler.why_no_profiles():
        pytest.skip(f"{profiler.why_no_profiles()} (scripts/install-deps installs both)")
    works, found = profiler.record_check()
    assert works, found
    assert found.startswith("perf recorded ") and "stacks of a busy shell" in found


def test_raw_perf_data_never_outlives_its_burst(tmp_path):
    """perf script failing on a burst's data (as when perf or inferno breaks) leaves no
    perf.data in the explain dir the workflows upload (removed once: it stayed)."""
    data = tmp_path / "scan-b-1.perf.data"
    with pytest.raises(Exception):  # noqa: B017 - whatever fails, nothing raw stays
        with profiler.scratch(data):
            data.write_bytes(b"not perf data")
            data.with_name(data.name + ".old").write_bytes(b"")
            profiler.fold(data)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("euid, paranoid, event, lacking", [
    (0, 2, "cpu-clock", None), (1000, 1, "cpu-clock", None), (1000, 2, "cpu-clock:u", "kernel frames missing")])
def test_a_runner_user_at_paranoid_two_samples_its_own_servers_in_user_space(euid, paranoid, event, lacking):
    chosen, said = profiler.event_for(euid, paranoid)
    assert chosen == event and (said is None if lacking is None else lacking in said)


def test_perfci_never_advises_opening_perf_to_every_process():
    """Removed once: doctor and the explain pass advised paranoid 1 or CAP_PERFMON."""
    from perfci.commands import doctor_cmd
    for text in (profiler.ADVICE, (REPO / "ci" / "perfci" / "run" / "profiler.py").read_text(),
                 (REPO / "ci" / "perfci" / "commands" / "doctor_cmd.py").read_text()):
        assert "paranoid=1" not in text and "give the runner CAP_PERFMON" not in text
    assert doctor_cmd.profiler is profiler


@pytest.mark.skipif(os.geteuid() != 0, reason="sets kernel.perf_event_paranoid (restored) and becomes another user")
def test_perf_samples_a_process_of_its_own_user_at_paranoid_two(shared_dir):
    """What a runner user at paranoid 2 gets, for real: perf as a non-root uid records
    its own busy process with the user-space event."""
    require_tools("perf", hint="apt-get install linux-perf; scripts/install-deps does")
    before = profiler.PARANOID.read_text().strip()
    uid = 64302
    out = shared_dir / "user"
    out.mkdir()
    os.chown(out, uid, uid)
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    busy = subprocess.Popen([*as_user, "sh", "-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done"])
    try:
        profiler.PARANOID.write_text("2\n")
        event, _ = profiler.event_for(uid, 2)
        proc = subprocess.run([*as_user, "perf", "record", "-q", "--no-buildid-cache", "-e", event, "-o",
                               str(out / "p.data"), "-p", str(busy.pid), "--", "sleep", "0.5"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        report = subprocess.run(["perf", "report", "-f", "-i", str(out / "p.data"), "--stdio", "--sort", "comm"],
                                capture_output=True, text=True, timeout=60)
        assert " sh" in report.stdout, report.stdout[-2000:]
    finally:
        profiler.PARANOID.write_text(before + "\n")
        busy.kill()
        busy.wait()
