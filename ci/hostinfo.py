"""The host fingerprint recorded with every result: what ran the numbers."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


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


def fingerprint(datadir: Path | None = None) -> dict:
    uname = platform.uname()
    info = {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "kernel": f"{uname.system} {uname.release}",
        "machine": uname.machine,
        "python": platform.python_version(),
    }
    if datadir is not None:
        info["datadir_filesystem"] = filesystem_of(datadir)
    return info


def harness_revision() -> dict:
    """The git commit of this harness checkout, and whether it had local changes."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_sha": sha or "unknown", "dirty": bool(status) if status is not None else None}
