"""Build hook only (metadata lives in pyproject.toml): the wheel carries the
project's built-in scenarios as `perfci/_scenarios`, the fallback when perfci runs
outside a perfci project (see perfci/util/paths.py), and `perfci/_build.json`, the
commit it was built from (an installed perfci names its own code in every result and
pins it in `perfci init`: host/hostinfo.py)."""

import json
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithScenarios(build_py):
    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "scenarios"
        target = Path(self.build_lib) / "perfci" / "_scenarios"
        target.mkdir(parents=True, exist_ok=True)
        for scenario in sorted(source.glob("*.yaml")):
            shutil.copy2(scenario, target / scenario.name)
        (Path(self.build_lib) / "perfci" / "_build.json").write_text(json.dumps(built_from(source.parent)) + "\n")


def built_from(checkout: Path) -> dict:
    """The checkout's commit and whether it had local changes (unknown outside git)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    sha, status = git("rev-parse", "HEAD"), git("status", "--porcelain", "--untracked-files=no")
    return {"git_sha": sha or "unknown", "dirty": bool(status) if status is not None else None}


setup(cmdclass={"build_py": BuildWithScenarios})
