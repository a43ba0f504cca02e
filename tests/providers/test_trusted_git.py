"""Trusted git (providers/trusted_git.py, `perfci pr-fetch`, scripts/build-server's git):
the tricks a pull request could plant in the runner's mirror or build clone, each tried
for real with git. Removed once, each planted trick worked: the hook read the token, the
insteadOf sent the fetch elsewhere, the replace ref built other code."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from perfci.providers.trusted_git import TRUSTED_CONFIG, TRUSTED_ENV, mirror_problems

from conftest import REPO, run_perfci
from small_server_tree import git, server_tree

TOKEN = "ghs_planted_hooks_must_never_see_this"


@pytest.fixture
def origin(tmp_path) -> tuple[Path, list[str]]:
    """A server repository with two commits (the second makes every commit durable)."""
    repo = server_tree(tmp_path)
    (repo / "server-options").write_text("--innodb-flush-log-at-trx-commit=1\n")
    git(repo, "commit", "-q", "-am", "durable")
    return repo, git(repo, "log", "--reverse", "--format=%H").split()


def pr_fetch(tmp_path: Path, mirror: Path, repo: Path, shas: list[str]) -> subprocess.CompletedProcess:
    return run_perfci("pr-fetch", "--mirror", str(mirror), "--url", f"file://{repo}", *shas,
                      env={"GITHUB_SERVER_URL": f"file://{repo.parent}", "PERFCI_READ_TOKEN": TOKEN})


def test_a_fresh_mirror_gets_a_ref_per_commit(tmp_path, origin):
    repo, shas = origin
    mirror = tmp_path / "mirror.git"
    proc = pr_fetch(tmp_path, mirror, repo, shas)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    refs = subprocess.run(["git", "--git-dir", str(mirror), "for-each-ref", "--format=%(refname)"],
                          capture_output=True, text=True).stdout.split()
    assert refs == sorted(f"refs/perfci/{sha}" for sha in shas)
    assert mirror_problems(mirror) == []


def plant_hook(mirror: Path, spy: Path, shas: list[str]) -> None:
    """A hook of the mirror, run by the fetch that holds the token."""
    hook = mirror / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\nenv > {spy}\ncat >/dev/null\n")
    hook.chmod(0o755)


def plant_redirect(mirror: Path, spy: Path, shas: list[str]) -> None:
    """The fetch (and its token) sent elsewhere."""
    subprocess.run(["git", "--git-dir", str(mirror), "config", "url.file:///elsewhere/.insteadOf", "file:///"],
                   check=True)


def plant_replace(mirror: Path, spy: Path, shas: list[str]) -> None:
    """The durable commit's objects replaced by the first's, in every later clone."""
    subprocess.run(["git", "--git-dir", str(mirror), "fetch", "-q", str(mirror.parent / "server-src"), shas[1]],
                   check=True, capture_output=True)
    subprocess.run(["git", "--git-dir", str(mirror), "replace", shas[1], shas[0]], check=True)


@pytest.mark.parametrize("plant, found", [(plant_hook, "hooks ['reference-transaction']"),
                                          (plant_redirect, "config ['url.file:///elsewhere/.insteadof=file:///']"),
                                          (plant_replace, "replace refs")])
def test_a_mirror_holding_a_planted_trick_is_made_anew_before_the_token_fetch(tmp_path, origin, plant, found):
    repo, shas = origin
    mirror, spy = tmp_path / "mirror.git", tmp_path / "spy"
    assert pr_fetch(tmp_path, mirror, repo, shas[:1]).returncode == 0
    plant(mirror, spy, shas)
    proc = pr_fetch(tmp_path, mirror, repo, shas)
    assert proc.returncode == 0, proc.stderr
    assert "made anew" in proc.stderr and found in proc.stderr, proc.stderr
    assert not spy.exists(), "a hook of the mirror ran"
    assert mirror_problems(mirror) == []


@pytest.mark.slow
def test_build_server_builds_the_commit_it_names_whatever_replace_ref_its_clone_holds(tmp_path, origin):
    """The clone build-server keeps between builds gets a replace ref (the durable commit
    for the first); the first commit still builds as itself."""
    repo, (first, durable) = origin
    env = {**os.environ, "PERFCI_CACHE": str(tmp_path / "cache"), "PERFCI_BUILD_REPO": str(repo),
           "PERFCI_HOST_WAIT": "60"}
    build = [str(REPO / "scripts" / "build-server"), "mariadb"]
    assert subprocess.run([*build, durable], env=env, capture_output=True, text=True).returncode == 0
    [clone] = (tmp_path / "cache" / "src").iterdir()
    subprocess.run(["git", "-C", str(clone), "replace", first, durable], check=True)
    proc = subprocess.run([*build, first], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    basedir = Path(proc.stdout.strip())
    assert json.loads((basedir / "perfci-build.json").read_text())["commit"] == first
    assert "flush-log-at-trx-commit" not in (basedir / "sbin" / "mariadbd").read_text()


def test_build_server_uses_the_trusted_settings_of_the_python_side():
    text = (REPO / "scripts" / "build-server").read_text()
    assert " ".join(f"{k}={v}" for k, v in TRUSTED_ENV.items()) in text
    assert " ".join(TRUSTED_CONFIG) in text
