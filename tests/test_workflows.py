"""The workflows: linted by actionlint and zizmor, and never running fork code on
self-hosted runners."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def _actionlint() -> str:
    found = shutil.which("actionlint")
    if found:
        return found
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("go") else str(Path.home() / "go")
    candidate = Path(gopath) / "bin" / "actionlint"
    assert candidate.exists(), "actionlint is needed: scripts/install-deps installs it with go install"
    return str(candidate)


def test_actionlint_passes():
    proc = subprocess.run([_actionlint()], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_passes():
    assert shutil.which("zizmor"), "zizmor is needed: pip install zizmor (scripts/install-deps does)"
    proc = subprocess.run(["zizmor", "--offline", ".github/"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _jobs(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["jobs"]


def _self_hosted(job: dict) -> bool:
    runs_on = job.get("runs-on")
    return "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])


def test_pr_workflow_never_runs_fork_code_on_self_hosted_runners():
    doc = yaml.safe_load((REPO / ".github/workflows/pr-checks.yml").read_text())
    triggers = doc[True] if True in doc else doc["on"]  # YAML 1.1 reads `on` as a boolean
    assert "pull_request_target" not in triggers  # that would run with secrets on fork code
    for name, job in doc["jobs"].items():
        if _self_hosted(job):
            condition = " ".join(job.get("if", "").split())
            assert "github.event.pull_request.head.repo.full_name == github.repository" in condition, name
            # the only other way in is a label that only maintainers (write access) can set
            assert condition.replace("github.event.pull_request.head.repo.full_name == github.repository", "") \
                .strip().startswith("|| contains(github.event.pull_request.labels.*.name, 'run-perf')"), name


def test_every_workflow_is_least_privilege_and_pinned():
    for path in WORKFLOWS:
        doc = yaml.safe_load(path.read_text())
        assert doc.get("permissions") == {"contents": "read"}, path.name
        for name, job in doc["jobs"].items():
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                if uses and not uses.startswith("./"):
                    ref = uses.split("@", 1)[1]
                    assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), f"{path.name}:{name}: {uses}"
                if uses.startswith("actions/checkout") and step.get("with", {}).get("persist-credentials") is not False:
                    # only a job that must push may keep credentials, and never on a self-hosted runner
                    assert job.get("permissions", {}).get("contents") == "write", f"{path.name}:{name}"
                    assert not _self_hosted(job), f"{path.name}:{name}"
