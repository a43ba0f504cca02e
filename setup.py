"""Build hook only (metadata lives in pyproject.toml): the wheel carries the
project's built-in scenarios as `perfci/_scenarios`, the fallback when perfci runs
outside a perfci project (see perfci/util/paths.py), and `perfci/_build.json`, the
commit it was built from (an installed perfci names its own code in every result and
pins it in `perfci init`: host/hostinfo.py)."""

import json
import runpy
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
        # the one revision function, loaded by path: perfci itself is not importable while it builds
        revision = runpy.run_path(str(source.parent / "ci" / "perfci" / "util" / "gitrev.py"))["revision"]
        (Path(self.build_lib) / "perfci" / "_build.json").write_text(json.dumps(revision(source.parent)) + "\n")


setup(cmdclass={"build_py": BuildWithScenarios})
