"""One benchmark per host: `run`, `ab` (and anything else that measures) hold a
host-wide lock and refuse to start while another perfci, server or sysbench runs.

Two runners on one host (or a PR job next to the nightly) would measure each other;
workflow concurrency groups cannot see across runners, so the host decides. The lock
is an flock on one file (`$PERFCI_LOCK_FILE`, else /var/lock/perfci.lock, else
/tmp/perfci-host.lock) holding who took it; the kernel drops it when the holder
dies, so a killed job never leaves a stale lock. `--allow-busy` runs anyway and the
result records what else was running.

A build (scripts/build-server under `perfci lock --yield`) holds the lock for hours but
need not run while something measures: a measurement that finds the host taken says so
by holding the "want" lock beside it (`LOCK.want`), and a yielding holder, which looks
for that every second, stops its command's process group (SIGSTOP), lets the lock go,
takes it back once nobody wants it, and resumes (SIGCONT). So nightly cases queued
behind a build wait seconds, not the build's hours; the stopped build keeps its memory.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from perfci.providers.docker import remove_orphan_containers
from perfci.util.errors import InfraFailure

# Processes that measure or are measured: another one on the host skews our numbers.
BENCH_PROCESSES = ("mysqld", "mariadbd", "sysbench")


def lock_path() -> Path:
    if os.environ.get("PERFCI_LOCK_FILE"):
        return Path(os.environ["PERFCI_LOCK_FILE"])
    if os.access("/var/lock", os.W_OK):
        return Path("/var/lock/perfci.lock")
    return Path("/tmp/perfci-host.lock")


@dataclass
class HostClaim:
    """What a measuring command knows about its exclusivity, recorded in results."""

    exclusive: bool                       # this process holds the host lock
    allow_busy: bool = False
    others: list[str] = field(default_factory=list)  # what ran beside us (only with --allow-busy)

    def record(self) -> dict[str, object]:
        return {"exclusive": self.exclusive, "allow_busy": self.allow_busy, "others_running": self.others}


_current: HostClaim | None = None
# Set while this process holds the lock, to its pid: a child script that would take the
# lock itself (build-server) sees that its parent holds it, instead of waiting on it forever.
HELD_ENV = "PERFCI_HOST_LOCK_HELD"


def current_claim() -> HostClaim | None:
    """The claim of the command running in this process (None outside one)."""
    return _current


def _proc_name(pid: str) -> tuple[str, str] | None:
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    exe = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else comm
    return comm, exe


def bench_processes(ignore_servers: bool = False) -> list[str]:
    """`name (pid N)` of every server or sysbench on this host that is not ours."""
    ours = {str(os.getpid())}
    names = BENCH_PROCESSES[2:] if ignore_servers else BENCH_PROCESSES
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name in ours:
            continue
        named = _proc_name(entry.name)
        if named and (named[0] in names or named[1] in names):
            found.append(f"{named[1] if named[1] in names else named[0]} (pid {entry.name})")
    return sorted(found)


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        info = json.loads(os.read(fd, 4096) or b"{}")
        return f"pid {info['pid']} ({info['command']}) since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (no holder recorded)"


def _holder_yields(fd: int) -> bool:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return bool(json.loads(os.read(fd, 4096) or b"{}").get("yields"))
    except (OSError, ValueError, AttributeError):
        return False


def _write_holder(fd: int, command: str, yields: bool = False) -> None:
    info = {"pid": os.getpid(), "command": command, "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "yields": yields}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
    except OSError:
        pass  # a lock file of another user is readable, not writable: the lock still holds


@contextmanager
def exclusive_host(command: str, allow_busy: bool = False, ignore_servers: bool = False,
                   wait_s: float = 0.0) -> Iterator[HostClaim]:
    """Hold the host lock for the duration of a measuring command.

    `ignore_servers`: a dsn: run measures a server that is meant to be running here.
    `wait_s`: wait that long for the host to become free before refusing (a CI job
    queued behind another benchmark on the same host)."""
    deadline = time.monotonic() + wait_s
    want: int | None = None  # held while queued: a yielding holder (a build) makes way
    try:
        while True:
            try:
                with _exclusive_host(command, allow_busy, ignore_servers) as claim:
                    if want is not None:
                        os.close(want)
                        want = None
                    yield claim
                    return
            except HostBusy as busy:
                if want is None and (wait_s > 0 or busy.holder_yields):
                    want = _take_want()
                if busy.holder_yields:  # it stops within a second or two
                    deadline = max(deadline, time.monotonic() + YIELD_WAIT_S)
                if time.monotonic() >= deadline:
                    raise
                time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
    finally:
        if want is not None:
            os.close(want)


YIELD_WAIT_S = 60.0  # how long anyone waits for a yielding holder to stop and let go
YIELD_POLL_S = 0.5


def want_path() -> Path:
    path = lock_path()
    return path.with_name(path.name + ".want")


def _open_want() -> int:
    """The want file, created if missing; read-only where another user created it (an
    flock needs no write access, so runners of several users on one host still see it)."""
    try:
        return os.open(want_path(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except PermissionError:
        return os.open(want_path(), os.O_RDONLY | os.O_NOFOLLOW)


def _take_want() -> int | None:
    """Hold the want lock (shared among waiters: each holds it until it has the host)."""
    try:
        fd = _open_want()
    except OSError:
        return None  # cannot say we wait: we wait all the same
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def _someone_wants(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def run_yielding(argv: list[str], command: str, wait_s: float) -> int:
    """Run `argv` holding the host lock, stopped (its whole process group) whenever a
    measurement waits for the host, resumed when none does. Its exit code."""
    path = lock_path()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except PermissionError:  # another user's lock file: the flock still holds (as in _exclusive_host)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    want = _open_want()

    def take(deadline: float) -> None:
        while True:
            if not _someone_wants(want):
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    _write_holder(fd, command, yields=True)
                    return
                except BlockingIOError:
                    pass
            if time.monotonic() >= deadline:
                raise HostBusy(f"this host is busy: the perfci host lock {path} is held by {_holder(fd)}")
            time.sleep(YIELD_POLL_S)

    try:
        take(time.monotonic() + wait_s)
        os.environ[HELD_ENV] = str(os.getpid())
        child = subprocess.Popen(argv, start_new_session=True)
        try:
            while child.poll() is None:
                time.sleep(YIELD_POLL_S)
                if child.poll() is None and _someone_wants(want):
                    os.killpg(child.pid, signal.SIGSTOP)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    print(f"perfci lock: {command}: stopped while a measurement has the host", file=sys.stderr)
                    time.sleep(YIELD_POLL_S * 2)  # the waiter takes the lock first
                    take(float("inf"))
                    os.killpg(child.pid, signal.SIGCONT)
                    print(f"perfci lock: {command}: resumed", file=sys.stderr)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGCONT)
                os.killpg(child.pid, signal.SIGTERM)
            child.wait()
            raise
        return child.returncode if child.returncode >= 0 else 128 - child.returncode
    finally:
        os.environ.pop(HELD_ENV, None)
        os.close(want)
        os.close(fd)


class HostBusy(InfraFailure):
    """Another benchmark holds or uses the host."""

    def __init__(self, message: str, holder_yields: bool = False):
        super().__init__(message)
        self.holder_yields = holder_yields  # a build that stops when asked (run_yielding)


@contextmanager
def _exclusive_host(command: str, allow_busy: bool, ignore_servers: bool) -> Iterator[HostClaim]:
    global _current
    path = lock_path()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise InfraFailure(f"host lock {path}: cannot open: {exc.strerror} (set PERFCI_LOCK_FILE)") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            locked = False
            if not allow_busy:
                raise HostBusy(f"this host is busy: the perfci host lock {path} is held by {_holder(fd)}; "
                               "one benchmark per host (wait for it, or --allow-busy to measure anyway)",
                               holder_yields=_holder_yields(fd)) from None
        if locked:
            _write_holder(fd, command)
            os.environ[HELD_ENV] = str(os.getpid())  # a child (scripts/build-server) works under this lock
            remove_orphan_containers()  # a killed run's container: its server is not "another benchmark"
        others = bench_processes(ignore_servers)
        if others and not allow_busy:
            raise HostBusy(f"this host is busy: {', '.join(others)} running; they would skew the numbers "
                               "(stop them, or --allow-busy to measure anyway: recorded in the result)")
        claim = HostClaim(exclusive=locked, allow_busy=allow_busy,
                          others=(others + ([] if locked else [f"perfci lock holder: {_holder(fd)}"])) if allow_busy else [])
        _current = claim
        yield claim
    finally:
        _current = None
        if os.environ.get(HELD_ENV) == str(os.getpid()):
            del os.environ[HELD_ENV]
        os.close(fd)  # releases the flock


def command_line() -> str:
    return " ".join(["perfci", *sys.argv[1:]])[:200]
