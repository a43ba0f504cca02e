"""A team project under `act`, shared by the end-to-end tests of its workflows: `perfci
init` committed, its workflows run with perfci's reusable ones mapped to this checkout,
GitHub's events given as payload files, gh talking to a recording fake."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, run_perfci
from fake_github import FakeGitHub
from simulated_month import git


def act_failure(proc) -> str:
    """What to read when act failed: every step that failed with the lines before it
    (a job that failed early is far from the end of act's output), then the end."""
    lines = proc.stdout.splitlines()
    failed = [i for i, line in enumerate(lines) if "❌" in line or "Failure - " in line]
    around = ["\n".join(lines[max(0, i - 25):i + 1]) for i in failed[:3]]
    return "\n...\n".join([*around, proc.stdout[-2500:], proc.stderr[-1500:]])


def team_project(tmp_path) -> tuple[Path, str]:
    """`perfci init` in an empty directory, committed: (the project, perfci's commit)."""
    ref = git("-C", str(REPO), "rev-parse", "HEAD").strip()
    team = tmp_path / "team"
    made = run_perfci("init", str(team), "--perfci-repository", "perfci-org/perfci", "--perfci-ref", ref)
    assert made.returncode == 0, made.stderr
    assert (team / ".github/workflows/nightly.yml").read_text().count(ref) == 2
    git("-C", str(team), "init", "-q", "-b", "main")
    commit(team, "perfci init")
    return team, ref


def commit(project: Path, message: str) -> str:
    git("-C", str(project), "add", "-A")
    git("-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", message)
    return git("-C", str(project), "rev-parse", "HEAD").strip()


def act(project: Path, event_name: str, workflow: str, event: dict, ref: str, tmp_path: Path,
        env: dict | None = None, variables: dict | None = None) -> subprocess.CompletedProcess:
    """One workflow of the team project under act, as `event_name` with `event`'s payload:
    perfci's reusable workflows mapped to this checkout, GitHub's repository name given
    (act would take the origin's local path), artifacts handed over in a directory."""
    path = tmp_path / f"event-{len(list(tmp_path.glob('event-*.json')))}.json"
    path.write_text(json.dumps({**event, "repository": {"full_name": "dev/team"}}))
    extra = [arg for key, value in (env or {}).items() for arg in ("--env", f"{key}={value}")]
    extra += [arg for key, value in (variables or {}).items() for arg in ("--var", f"{key}={value}")]
    if os.environ.get("PERFCI_ALLOW_BUSY"):  # a test beside other end-to-end modules (scripts/check): its jobs' too
        extra += ["--env", f"PERFCI_ALLOW_BUSY={os.environ['PERFCI_ALLOW_BUSY']}"]
    return subprocess.run(
        [shutil.which("act") or "act", event_name, "-W", f".github/workflows/{workflow}", "-e", str(path),
         "--local-repository", f"perfci-org/perfci@{ref}={REPO}", "--env", f"PERFCI_ACT_TOOL={REPO}",
         "--env", "PERFCI_AB_SIZE=profile", "--env", f"PERFCI_ACT_ARTIFACTS={tmp_path / 'artifacts'}",
         "--env", "PERFCI_EXPLAIN=never",
         "--env", "GITHUB_REPOSITORY=dev/team", *extra,
         "-P", "self-hosted=-self-hosted", "-P", "ubuntu-latest=-self-hosted", "--no-cache-server"],
        cwd=project, capture_output=True, text=True, timeout=900, env={**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"})


def pull_request(number: int, action: str, base: str, head: str, branch: str, labels: tuple[str, ...] = ()) -> dict:
    """A pull_request event of a branch of the team's own repository."""
    named = [{"name": name} for name in labels]
    return {"action": action, "number": number, "pull_request": {
        "number": number, "labels": named, "user": {"login": "dev"},
        "base": {"sha": base, "ref": "main"}, "head": {"sha": head, "ref": branch, "repo": {"full_name": "dev/team"}}}}


def fake_env(fake: FakeGitHub, tmp_path: Path) -> dict:
    """gh's environment for the fake API (the repository stays the event's: dev/team)."""
    return {k: v for k, v in fake.env(tmp_path / "gh").items() if v and k != "GITHUB_REPOSITORY"}


def comment_run(fake: FakeGitHub, team: Path, ref: str, head: str, branch: str, tmp_path: Path,
                workflow: str = "pr-comment.yml"):
    """The comment workflow after the PR check's run (workflow_run), gh talking to the fake API."""
    event = {"workflow_run": {"event": "pull_request", "head_sha": head, "head_branch": branch, "id": 1,
                              "html_url": "https://github.example/dev/team/actions/runs/1",
                              "head_repository": {"full_name": "dev/team"}}}
    return act(team, "workflow_run", workflow, event, ref, tmp_path, env=fake_env(fake, tmp_path))


def published(team: Path, tmp_path: Path, branch: str) -> None:
    """main pushed to a local bare `origin` (the PR check fetches its base from there),
    then a new branch checked out for the PR's commits."""
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin))
    git("-C", str(team), "remote", "add", "origin", str(origin))
    git("-C", str(team), "push", "-q", "origin", "main")
    git("-C", str(team), "checkout", "-q", "-b", branch)
