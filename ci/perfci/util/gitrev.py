"""A checkout's commit and whether it has local changes: standard library only, so that
setup.py (at build time, perfci not importable) and host/hostinfo.py share it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def revision(checkout: Path) -> dict[str, object]:
    """{"git_sha": SHA or "unknown", "dirty": bool, or None where git cannot tell}."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    sha, status = git("rev-parse", "HEAD"), git("status", "--porcelain", "--untracked-files=no")
    return {"git_sha": sha or "unknown", "dirty": bool(status) if status is not None else None}
