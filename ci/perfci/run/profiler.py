"""CPU profiles of a server process: `perf record` (the cpu-clock software event: it
works in a VM without hardware counters) around one burst, folded by inferno's
collapse-perf into `frame;frame;… ns` stacks.

perf starts with its events disabled and is enabled over its control FIFO; the burst
starts only after perf acknowledged, so every burst's profile covers the whole burst
and nothing before it. Call graphs are unwound from DWARF (release builds have no
frame pointers); a stripped binary still profiles, with unresolved frames that
judge/profile_diff.py recognises."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from perfci.model.explain import parse_folded
from perfci.providers.local import SANDBOX_SERVERS_ENV, sandboxed_servers
from perfci.util.errors import InfraFailure

EVENT = "cpu-clock"
FREQUENCY = 997                 # samples per second of CPU (odd: no lockstep with timer ticks)
CALL_GRAPH = "dwarf,16384"      # the stack bytes copied per sample
ACK_TIMEOUT_S = 20.0
INFERNO_VERSION = "0.12.8"      # scripts/install-deps installs this one (cargo install --locked)


PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
# the most perfci asks of a runner: 2 lets a user profile its own processes in user space
ADVICE = "sysctl kernel.perf_event_paranoid=2 (a user profiles its own processes, user space only)"


def paranoid_level() -> int | None:
    try:
        return int(PARANOID.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def event_for(euid: int, paranoid: int | None) -> tuple[str, str | None]:
    """The sampling event perf may use here, and what its profiles lack: root samples
    kernel frames too; a user at paranoid 2 samples its own processes in user space
    (`:u`: kernel frames missing, said); at 0-1 both."""
    if euid != 0 and paranoid is not None and paranoid >= 2:
        return f"{EVENT}:u", f"kernel frames missing: perf_event_paranoid is {paranoid} and perfci is not root"
    return EVENT, None


def sampling_event() -> tuple[str, str | None]:
    return event_for(os.geteuid(), paranoid_level())


def profiler_line() -> str:
    return f"perf record -e {sampling_event()[0]} -F {FREQUENCY} --call-graph {CALL_GRAPH}"


def tool(name: str) -> str | None:
    """An executable on PATH, else in cargo's bin directory (where install-deps puts inferno)."""
    cargo_bin = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin"
    return shutil.which(name) or shutil.which(name, path=str(cargo_bin))


def why_no_profiles() -> str | None:
    """Why CPU profiles cannot be taken here (None: they can): perf, its permission,
    inferno's collapse-perf. perf itself is tried by `perfci doctor` (record_check)."""
    if not tool("perf"):
        return "perf is not installed (Debian: apt-get install linux-perf)"
    if not tool("inferno-collapse-perf"):
        return (f"inferno is not installed (cargo install inferno --version {INFERNO_VERSION} --locked; "
                "scripts/install-deps does it)")
    paranoid = paranoid_level()
    if os.geteuid() != 0 and paranoid is not None and paranoid > 2:
        return f"perf_event_paranoid is {paranoid} and perfci is not root: perf may not profile; {ADVICE}"
    if os.geteuid() != 0 and sandboxed_servers() is not None:
        # perf on another uid's process needs what a runner user should not have (CAP_PERFMON or paranoid -1)
        return (f"the servers run sandboxed ({SANDBOX_SERVERS_ENV}), as another user, and perfci is not root: "
                "perf may not profile another user's process")
    return None


@contextmanager
def scratch(data: Path) -> Iterator[Path]:
    """A perf.data path that is gone when the block ends, however it ends (perf keeps a
    previous file as `.old`): raw samples hold the profiled process's memory addresses
    and, with kernel frames, the host's; only folded stacks are kept or uploaded."""
    try:
        yield data
    finally:
        for path in (data, data.with_name(data.name + ".old")):
            path.unlink(missing_ok=True)


def record_check() -> tuple[bool, str]:
    """Record this check's own child for a moment: (works, what perf said)."""
    if why := why_no_profiles():
        return False, why
    with tempfile.TemporaryDirectory(prefix="perfci-perf-") as tmp:
        busy = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"])
        try:
            with recording(busy.pid, Path(tmp) / "check.data"):
                busy.wait(timeout=30)
            folded = fold(Path(tmp) / "check.data")
        except (InfraFailure, subprocess.TimeoutExpired) as failure:
            return False, str(failure)
        finally:
            busy.kill()
            busy.wait()
    samples = len(folded)
    event, lacking = sampling_event()
    return (samples > 0, f"perf recorded {samples} stacks of a busy shell with -e {event}"
            f"{f' ({lacking})' if lacking else ''}" if samples else f"perf recorded nothing with -e {event}")


class ControlledPerf:
    """A perf command (`record`, `stat`) attached to process `pid` with its events
    disabled, enabled over its control FIFO: start() returns once perf acknowledged (the
    measured work starts after that), finish() ends it with SIGINT and returns its stderr."""

    def __init__(self, args: list[str], pid: int):
        self.args, self.pid = args, pid
        self.perf: subprocess.Popen | None = None

    def start(self) -> None:
        self.fifo_dir = Path(tempfile.mkdtemp(prefix="perfci-perfctl-"))
        ctl, ack = self.fifo_dir / "ctl", self.fifo_dir / "ack"
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # read-write ends: opening a FIFO for one direction blocks until perf opens the other
        self.ctl_fd, self.ack_fd = os.open(ctl, os.O_RDWR), os.open(ack, os.O_RDWR)
        self.perf = subprocess.Popen([tool("perf") or "perf", *self.args, "-p", str(self.pid), "-D", "-1",
                                      "--control", f"fifo:{ctl},{ack}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        os.write(self.ctl_fd, b"enable\n")
        ready, _, _ = select.select([self.ack_fd], [], [], ACK_TIMEOUT_S)
        if not ready:
            self.perf.kill()
            err = (self.perf.communicate()[1] or "").strip()[-300:]
            self._close()
            raise InfraFailure(f"perf {self.args[0]} did not start on pid {self.pid} within {ACK_TIMEOUT_S:.0f} s: {err}")
        os.read(self.ack_fd, 64)

    def finish(self) -> str:
        """End perf (SIGINT: it writes its data or counts) and return its stderr."""
        perf = self.perf
        assert perf is not None, "finish() before start()"
        if perf.poll() is None:
            perf.send_signal(signal.SIGINT)
        try:
            _, err = perf.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            perf.kill()
            _, err = perf.communicate()
        self._close()
        if perf.returncode not in (0, -signal.SIGINT):
            raise InfraFailure(f"perf {self.args[0]} on pid {self.pid} failed (exit {perf.returncode}): "
                               f"{(err or '').strip()[-300:]}")
        return err or ""

    def _close(self) -> None:
        os.close(self.ctl_fd)
        os.close(self.ack_fd)
        shutil.rmtree(self.fifo_dir, ignore_errors=True)


@contextmanager
def recording(pid: int, out: Path) -> Iterator[None]:
    """perf recording process `pid` (all its threads) into `out` while the block runs."""
    # --no-buildid-cache: no copy of every profiled binary under ~/.debug (the binary is where perf found it)
    perf = ControlledPerf(["record", "--no-buildid-cache", "-e", sampling_event()[0], "-F", str(FREQUENCY),
                           "--call-graph", CALL_GRAPH, "-o", str(out)], pid)
    perf.start()
    try:
        yield
    finally:
        err = perf.finish()
    if not out.exists():
        raise InfraFailure(f"perf record on pid {pid} wrote no {out}: {err.strip()[-300:]}")


def fold(data: Path) -> dict[str, int]:
    """A perf.data file -> folded stacks {stack: CPU ns} (kernel frames marked `_[k]`)."""
    # --no-inline: perf would resolve inlined frames through addr2line, one process per
    # binary: ~45 s per burst of a MySQL release binary instead of about one
    script = subprocess.run([tool("perf") or "perf", "script", "--no-inline", "-i", str(data)], capture_output=True,
                            text=True, errors="replace", timeout=600)
    if script.returncode != 0:
        raise InfraFailure(f"perf script {data} failed: {script.stderr.strip()[-300:]}")
    collapse = subprocess.run([tool("inferno-collapse-perf") or "inferno-collapse-perf", "--all"],
                              input=script.stdout, capture_output=True, text=True, timeout=600)
    if collapse.returncode != 0:
        raise InfraFailure(f"inferno-collapse-perf failed: {collapse.stderr.strip()[-300:]}")
    return parse_folded(collapse.stdout)

