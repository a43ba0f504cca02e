"""One benchmark per host: the host lock and the busy-process check (no server starts:
every refusal happens before one would)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfci.host.hostlock import bench_processes, exclusive_host
from perfci.util.errors import InfraFailure

from conftest import PERFCI, REPO, SOURCE_ENV, run_perfci

HOLD = """
import sys, time
from perfci.host.hostlock import exclusive_host
with exclusive_host("perfci run held-by-test", allow_busy=True):  # holds the lock all the same
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def lock_file(tmp_path, monkeypatch):
    path = tmp_path / "host.lock"
    monkeypatch.setenv("PERFCI_LOCK_FILE", str(path))
    monkeypatch.delenv("PERFCI_ALLOW_BUSY")  # what these tests are about
    return path


@pytest.fixture
def holder(lock_file):
    """Another process holding the host lock, as a running perfci would."""
    import os
    proc = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, **SOURCE_ENV})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.slow
def test_a_second_run_refuses_at_once_naming_the_holder(holder, tmp_path):
    started = time.monotonic()
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "smoke", "--out", str(tmp_path / "o"))
    elapsed = time.monotonic() - started
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"error: this host is busy: the perfci host lock {tmp_path / 'host.lock'} is held by "
                                  f"pid {holder.pid} (perfci run held-by-test) since ")
    assert "--allow-busy" in proc.stderr and proc.stderr.count("\n") == 1
    assert elapsed < 30 and not (tmp_path / "o").exists()  # at once: the holder keeps the lock 60 s
    proc = run_perfci("ab", "rebuild-after-delete", "--mode", "rounds", "--rounds", "2", "--out", str(tmp_path / "o"))
    assert proc.returncode == 3 and f"held by pid {holder.pid}" in proc.stderr


def test_the_lock_is_released_when_its_holder_dies(holder, lock_file):
    holder.kill()
    holder.wait()
    # the kernel dropped the flock: no stale lock (allow_busy: other servers on a dev host don't matter here)
    with exclusive_host("perfci run next", allow_busy=True) as claim:
        assert claim.exclusive
        assert '"command": "perfci run next"' in lock_file.read_text()


def test_allow_busy_measures_anyway_and_says_beside_what(holder):
    with exclusive_host("perfci run beside", allow_busy=True) as claim:
        record = claim.record()
    assert record["exclusive"] is False and record["allow_busy"] is True
    assert any(f"pid {holder.pid}" in other for other in record["others_running"])  # type: ignore[attr-defined]


def test_a_running_sysbench_or_server_makes_the_host_busy(lock_file, tmp_path):
    fake = subprocess.Popen(["bash", "-c", "exec -a sysbench sleep 60"])
    try:
        deadline = time.monotonic() + 5
        while f"sysbench (pid {fake.pid})" not in bench_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(InfraFailure, match=rf"this host is busy: .*sysbench \(pid {fake.pid}\).*--allow-busy"):
            with exclusive_host("perfci run"):
                pass
        proc = run_perfci("run", "rebuild-after-delete", "--out", str(tmp_path / "o"))
        assert proc.returncode == 3 and f"sysbench (pid {fake.pid})" in proc.stderr
        with exclusive_host("perfci run", ignore_servers=True, allow_busy=True) as claim:
            assert claim.exclusive and f"sysbench (pid {fake.pid})" in claim.others
    finally:
        fake.kill()
        fake.wait()


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
@pytest.mark.alone  # a benchmark beside it (the smoke series' sysbench) makes the host busy
def test_host_wait_queues_behind_the_holder_instead_of_refusing(lock_file):
    import os
    proc = subprocess.Popen([sys.executable, "-c", HOLD.replace("time.sleep(60)", "time.sleep(0.5)")],
                            stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, **SOURCE_ENV})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        started = time.monotonic()
        with exclusive_host("perfci run queued", allow_busy=False, ignore_servers=True, wait_s=30) as claim:
            assert claim.exclusive and time.monotonic() - started >= 0.2
    finally:
        proc.kill()
        proc.wait()


BUILD = """
import os, sys, time
path = sys.argv[1]
n = 0
while True:
    n += 1
    with open(path + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {n}")
    os.replace(path + ".tmp", path)
    time.sleep(0.05)
"""


def progress_of(path) -> tuple[int, int]:
    pid, n = path.read_text().split()
    return int(pid), int(n)


@pytest.mark.slow
@pytest.mark.alone
def test_a_yielding_build_stops_while_a_measurement_has_the_host_and_resumes_after(lock_file, tmp_path):
    """`perfci lock --yield` (what scripts/build-server runs under): a measurement that
    finds the host taken by it gets the host within seconds; the build's process group is
    stopped meanwhile (no progress, state T), resumed when the measurement is done, and
    stopped for good when the lock's holder is cancelled."""
    import os
    import signal
    counter = tmp_path / "progress"
    wrapper = subprocess.Popen([*PERFCI, "lock", "--yield", "--what", "build-server mariadb test", "--",
                                sys.executable, "-c", BUILD, str(counter)],
                               cwd=REPO, env={**os.environ, **SOURCE_ENV}, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (counter.exists() and "yields" in lock_file.read_text() if lock_file.exists() else False):
            assert time.monotonic() < deadline and wrapper.poll() is None
            time.sleep(0.1)
        build_pid, _ = progress_of(counter)
        started = time.monotonic()
        with exclusive_host("perfci run measuring", allow_busy=False, ignore_servers=True, wait_s=0) as claim:
            assert claim.exclusive and time.monotonic() - started < 30  # seconds, not the build's hours
            state = Path(f"/proc/{build_pid}/stat").read_text().split(")")[1].split()[0]
            before = progress_of(counter)[1]
            time.sleep(1.0)
            assert state == "T" and progress_of(counter)[1] == before  # stopped: no progress while we measure
        deadline = time.monotonic() + 30  # resumed (the build polls every half second; a busy host is slower)
        while progress_of(counter)[1] <= before:
            assert time.monotonic() < deadline, "the build did not resume"
            time.sleep(0.1)
        assert wrapper.poll() is None
    finally:
        wrapper.send_signal(signal.SIGTERM)
        wrapper.wait(timeout=30)
    stderr = wrapper.stderr.read() if wrapper.stderr else ""
    assert "stopped while a measurement has the host" in stderr and "resumed" in stderr
    time.sleep(0.5)
    assert not Path(f"/proc/{build_pid}").exists() or \
        Path(f"/proc/{build_pid}/stat").read_text().split(")")[1].split()[0] == "Z"


@pytest.mark.alone  # a benchmark beside it (the smoke series' sysbench) makes the host busy
def test_the_host_record_of_every_measurement_carries_its_lock_claim(lock_file):
    """One builder of the host record (a run's and an A/B's alike): inside the lock it
    says the measurement had the host to itself."""
    from perfci.host.hostinfo import host_record
    with exclusive_host("perfci ab held", allow_busy=False, ignore_servers=True):
        held = host_record(None, "local")
    assert held.check is not None and held.check.exclusive and held.runner_class == "local"
    assert not host_record(None, "local").check.exclusive  # outside any lock: no claim
