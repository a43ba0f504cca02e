"""perfci as a user installs it: `pip install .` (not editable) into a fresh venv,
then used from a project checkout and from outside any project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, write_tiny

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(tmp_path_factory, real_server_tools):
    """A venv (system site-packages for the dependencies) with perfci built from a copy
    of the tracked files, so the build leaves nothing in the checkout."""
    base = tmp_path_factory.mktemp("install")
    source = base / "src"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps",
                           str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PERFCI_ROOT")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return venv / "bin" / "perfci", env


def perfci(installed, *args, cwd):
    exe, env = installed
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    exe, env = installed
    where = subprocess.run([str(exe.parent / "python"), "-c", "import perfci; print(perfci.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env=env).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(REPO))


def test_installed_perfci_lists_and_runs_the_projects_scenarios(installed, tmp_path):
    listed = perfci(installed, "list", cwd=REPO / "tests")  # the project is found upward
    assert listed.returncode == 0 and "rebuild-after-delete" in listed.stdout and "change-buffer-matrix" in listed.stdout
    out = tmp_path / "results"
    proc = perfci(installed, "run", "rebuild-after-delete", "--profile", "smoke", "--out", str(out), "-q", cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = out.glob("*.json")
    result = json.loads(path.read_text())
    assert result["schema"] == "perfci.result/2" and result["status"] == "ok"
    assert result["harness"]["perfci"] and "numpy" in result["harness"]["dependencies"]
    assert result["scenario"]["file"] == str(REPO / "scenarios" / "rebuild-after-delete.yaml")


def test_outside_a_project_the_shipped_scenarios_are_used(installed, tmp_path):
    listed = perfci(installed, "list", cwd=tmp_path)
    assert listed.returncode == 0 and "rebuild-after-delete" in listed.stdout
    scenario = write_tiny(tmp_path)
    proc = perfci(installed, "run", str(scenario), "--out", str(tmp_path / "out"), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list((tmp_path / "out").glob("*.json"))) == 1
