#!/usr/bin/env python3
"""The server-code PR check under act on the real MariaDB tree, once, outside CI
(docs/findings/2026-11-26-server-code-pr-check.md). From the perfci checkout, on a quiet
machine, after the build-from-source finding's repository exists (/var/tmp/mariadb-repo,
scripts/debian-source-repo + plant-line.py):

    scripts/python docs/findings/data/2026-11-26-server-code-pr-check/pr-check.py OUT_DIR

1. In the server repository: `perfci-pr/base` = b11832e0c950 (the commit before the
   planted one) + the workflows `perfci init --server-code` writes; `perfci-pr/head` =
   that + the planted commit 6fcb6235aaf1 cherry-picked (fixed dates: the same SHAs for
   the same perfci commit).
2. A clone of it checked out at the head (its origin: the repository, which has both
   commits, as GitHub's has a PR's), and the team's check under act as GitHub would run
   it on a pull_request event: perfci's reusable perfci-server-pr.yml, mapped to this
   checkout, on this host.
3. The comment workflow after it, GitHub's API a recording fake (tests/fake_github.py).
Everything it printed and wrote is kept in OUT_DIR."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

PERFCI = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(PERFCI / "tests"))
from fake_github import FakeGitHub  # noqa: E402

SERVER = Path("/var/tmp/mariadb-repo")
CLONE = Path("/var/tmp/mariadb-pr")
BEFORE_PLANTED = "b11832e0c950c7b445d9b2d80cc22b11229a3a24"
PLANTED = "6fcb6235aaf101c7694b59ea74a0ab0ac8b8cb64"
DATE = "2026-11-20T12:00:00+00:00"
IDENTITY = {"GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.invalid", "GIT_COMMITTER_NAME": "dev",
            "GIT_COMMITTER_EMAIL": "dev@example.invalid", "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **IDENTITY}).stdout.strip()


def pr_branches(ref: str) -> tuple[str, str]:
    git(SERVER, "checkout", "-q", "-B", "perfci-pr/base", BEFORE_PLANTED)
    shutil.rmtree(SERVER / ".github", ignore_errors=True)
    made = subprocess.run([str(PERFCI / "scripts" / "perfci"), "init", str(SERVER), "--server-code", "mariadb",
                           "--scenario", "microbench", "--phase", "full-scan", "--perfci-repository",
                           "perfci-org/perfci", "--perfci-ref", ref, "--no-interactive"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    git(SERVER, "add", ".github")
    git(SERVER, "commit", "-q", "-m", "perf: perfci's server-code PR check")
    base = git(SERVER, "rev-parse", "HEAD")
    git(SERVER, "checkout", "-q", "-B", "perfci-pr/head", base)
    git(SERVER, "cherry-pick", PLANTED)
    return base, git(SERVER, "rev-parse", "HEAD")


def act(workflow: str, event: dict, out: Path, name: str, env: dict) -> subprocess.CompletedProcess:
    path = out / f"event-{name}.json"
    path.write_text(json.dumps({**event, "repository": {"full_name": "dev/mariadb"}}, indent=1))
    args = [shutil.which("act") or "act", event["_name"], "-W", f".github/workflows/{workflow}", "-e", str(path),
            "--local-repository", f"perfci-org/perfci@{env.pop('REF')}={PERFCI}", "--env", f"PERFCI_ACT_TOOL={PERFCI}",
            "--env", f"PERFCI_ACT_ARTIFACTS={out / 'artifacts'}", "--env", "GITHUB_REPOSITORY=dev/mariadb",
            *[a for k, v in env.items() for a in ("--env", f"{k}={v}")],
            "-P", "self-hosted=-self-hosted", "-P", "ubuntu-latest=-self-hosted", "--no-cache-server"]
    started = time.time()
    proc = subprocess.run(args, cwd=CLONE, capture_output=True, text=True,
                          env={**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"})
    (out / f"act-{name}.log").write_text(f"$ {' '.join(args)}\n# {time.time() - started:.0f} s, exit "
                                         f"{proc.returncode}\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")
    return proc


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    ref = git(PERFCI, "rev-parse", "HEAD")
    base, head = pr_branches(ref)
    shutil.rmtree(CLONE, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", "--branch", "perfci-pr/head", str(SERVER), str(CLONE)], check=True)
    pull = {"number": 101, "labels": [], "user": {"login": "dev"}, "base": {"sha": base, "ref": "main"},
            "head": {"sha": head, "ref": "perfci-pr/head", "repo": {"full_name": "dev/mariadb"}}}
    cache = Path(os.environ.get("PERFCI_CACHE", Path.home() / ".cache" / "perfci"))
    check = act("perf-pr-checks.yml", {"_name": "pull_request", "action": "opened", "number": 101,
                                       "pull_request": pull}, out, "pr-check",
                {"REF": ref, "PERFCI_CACHE": str(cache)})
    # the A/B's bursts, reports and explain pass, from the job's workspace (act's copy)
    workspace = re.search(r"From (\S+/hostexecutor)", check.stdout)
    if workspace and (Path(workspace[1]) / "results").is_dir():
        shutil.copytree(Path(workspace[1]) / "results", out / "results", dirs_exist_ok=True)
    with FakeGitHub(out) as fake:
        fake.add_pull(101, head)
        gh = {k: v for k, v in fake.env(out / "gh").items() if v and k != "GITHUB_REPOSITORY"}
        run = {"event": "pull_request", "head_sha": head, "head_branch": "perfci-pr/head", "id": 1,
               "html_url": "https://github.example/dev/mariadb/actions/runs/1",
               "head_repository": {"full_name": "dev/mariadb"}}
        said = act("perf-pr-comment.yml", {"_name": "workflow_run", "workflow_run": run}, out, "pr-comment",
                   {"REF": ref, **gh})
        (out / "comment.md").write_text("".join(c["body"] + "\n" for c in fake.comments.get(101, [])))
    (out / "run.json").write_text(json.dumps({"perfci": ref, "base": base, "head": head, "cache": str(cache),
                                              "check_exit": check.returncode, "comment_exit": said.returncode},
                                             indent=1) + "\n")
    print(f"check exit {check.returncode}, comment exit {said.returncode}; base {base[:12]} head {head[:12]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
