"""Who used the CPU during a measured phase: the host as a whole (/proc/stat), the
server (its process), the client (sysbench, a reaped child of ours) and perfci
itself, and the kernel's own threads (block I/O completion, writeback, journal:
mostly the measured server's own I/O, worth most of a core on a VM's virtio disk
under an fsync per transaction). What is left is other processes' load, which
invalidates a measurement on a 2-core runner (one busy core halves what the server
can get)."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path


def process_cpu_seconds(pid: int) -> float | None:
    """user + system CPU time of a local process, from /proc/PID/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def thread_cpu_ns(pid: int | None) -> dict[int, int] | None:
    """On-CPU nanoseconds of each live thread of a local process, from
    /proc/PID/task/TID/schedstat (its first field): the 10 ms ticks of `stat` are too
    coarse for a burst of a few seconds. None where the process cannot be read."""
    if not pid:
        return None
    out: dict[int, int] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            out[int(task.name)] = int(Path(task, "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between the listing and the read
    return out or None


def thread_cpu_deltas(before: dict[int, int] | None, after: dict[int, int] | None) -> list[int]:
    """Nanoseconds each thread alive at the end spent on CPU in between (a thread that
    ended in between is lost: the server's connection threads stay cached)."""
    if before is None or after is None:
        return []
    return [max(0, ns - before.get(tid, 0)) for tid, ns in after.items()]


def host_busy_seconds() -> float | None:
    """CPU seconds all CPUs spent not idle since boot (user..steal, less idle and iowait)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    busy = sum(fields[:8]) - idle  # guest time is already counted in user
    return busy / os.sysconf("SC_CLK_TCK")


def _own_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


KTHREADD = 2  # the parent of every kernel thread


def kernel_thread_seconds() -> float:
    """CPU seconds of the kernel's threads (kthreadd's children) since they started."""
    ticks = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        if int(fields[1]) == KTHREADD or int(entry.name) == KTHREADD:  # ppid (field 4 of stat)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuSample:
    at: float
    host: float | None
    server: float | None
    children: float
    own: float
    kernel: float = 0.0


def sample(server_pid: int | None) -> CpuSample:
    return CpuSample(time.monotonic(), host_busy_seconds(),
                     process_cpu_seconds(server_pid) if server_pid else None,
                     _own_seconds(resource.RUSAGE_CHILDREN), _own_seconds(resource.RUSAGE_SELF),
                     kernel_thread_seconds())


def cores_used(before: CpuSample, after: CpuSample) -> dict[str, float] | None:
    """Average cores used between two samples by the host, the server, the client
    (our reaped children: sysbench), perfci, the kernel's threads, and everything
    else. None where the server's CPU cannot be read here (a container, a remote
    server)."""
    seconds = after.at - before.at
    if seconds <= 0 or before.host is None or after.host is None or before.server is None or after.server is None:
        return None
    host = after.host - before.host
    server = after.server - before.server
    client = after.children - before.children
    own = after.own - before.own
    kernel = max(0.0, after.kernel - before.kernel)
    return {key: round(value / seconds, 3) for key, value in (
        ("host", host), ("server", server), ("client", client), ("perfci", own), ("kernel", kernel),
        ("others", max(0.0, host - server - client - own - kernel)))}


def has_instruction_counter(sys_root: Path = Path("/sys")) -> bool:
    """The CPU's PMU offers an instructions event to perf (a VM without a virtual PMU
    lists none: `perf stat -e instructions` then reports it `<not supported>`)."""
    devices = sys_root / "bus" / "event_source" / "devices"
    return any((devices / pmu / "events" / "instructions").exists() for pmu in ("cpu", "cpu_core", "cpu_atom"))
