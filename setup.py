"""Build hook only (metadata lives in pyproject.toml): the wheel carries the
project's built-in scenarios as `perfci/_scenarios`, the fallback when perfci runs
outside a perfci project (see perfci/util/paths.py)."""

import shutil
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


setup(cmdclass={"build_py": BuildWithScenarios})
