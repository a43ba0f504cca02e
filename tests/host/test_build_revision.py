"""An installed perfci names its own commit (#57): the wheel's build writes it beside the
package (setup.py), and results and `perfci init` read it there, never the project's
checkout perfci happens to run in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from small_server_tree import git


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_an_installed_perfci_names_the_commit_it_was_built_from_not_the_projects(tmp_path):
    """Removed once: the installed perfci recorded the project's HEAD as harness.git_sha."""
    build = tmp_path / "build"
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    built = json.loads((build / "perfci" / "_build.json").read_text())
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert built["git_sha"] == head
    installed = tmp_path / "site"  # the package as pip puts it: no git around it
    shutil.copytree(build / "perfci", installed / "perfci")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    git(project, "commit", "-q", "--allow-empty", "-m", "the team's project")
    ran = subprocess.run([sys.executable, "-c", "from perfci.host.hostinfo import harness_revision as h; "
                          "print(h()['git_sha'])"], cwd=project, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(installed)})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == head != git(project, "rev-parse", "HEAD")
