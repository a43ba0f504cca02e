"""git where a token is, or where a commit decides what gets built: nothing a pull
request could have planted (a repository's config or hooks, a user's ~/.gitconfig, a
replace ref) takes part.

- every call: no system or global config, hooks off (`core.hooksPath=/dev/null`), no
  fsmonitor command, replace objects ignored, never a prompt;
- the runner's mirror of a server repository (kept between pull requests) is used only
  while it is what `git init --bare` made plus fetched objects and refs: a config key,
  a hook, an alternates file or a replace ref found there and the mirror is made anew
  (its objects are fetched again: a cost, never a risk).
The token goes through git's environment (an `http.<server>.extraheader`), never argv or
a config file.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from perfci.util.errors import InfraFailure

TRUSTED_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
               "GIT_TERMINAL_PROMPT": "0"}
TRUSTED_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.ext.allow=never")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without any GIT_* of its own, with the trusted settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, **TRUSTED_ENV, **(extra or {})}


def run_git(args: Sequence[str], *, git_dir: Path | None = None, cwd: Path | None = None,
            extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """git with the trusted settings, its exit code the caller's to read."""
    where = ["--git-dir", str(git_dir)] if git_dir is not None else []
    return subprocess.run(["git", *TRUSTED_CONFIG, *where, *args], capture_output=True, text=True, cwd=cwd,
                          env=git_env(extra_env))


def git(args: Sequence[str], *, git_dir: Path | None = None, cwd: Path | None = None,
        extra_env: Mapping[str, str] | None = None) -> str:
    """git with the trusted settings; a failure is InfraFailure with git's own words."""
    proc = run_git(args, git_dir=git_dir, cwd=cwd, extra_env=extra_env)
    if proc.returncode != 0:
        where = f" in {cwd or git_dir}" if cwd or git_dir else ""
        raise InfraFailure(f"git {' '.join(args[:2])}{where} failed (exit {proc.returncode})",
                           detail=proc.stderr[-2000:])
    return proc.stdout


def _fresh_config() -> set[str]:
    """The config lines `git init --bare` writes with this git."""
    with tempfile.TemporaryDirectory() as tmp:
        git(["init", "-q", "--bare", tmp])
        return set(git(["config", "--file", f"{tmp}/config", "--list"]).splitlines())


def mirror_problems(mirror: Path) -> list[str]:
    """What makes the mirror other than `git init --bare` plus fetches."""
    problems = []
    config = set(git(["config", "--file", str(mirror / "config"), "--list"]).splitlines())
    if config != _fresh_config():
        problems.append(f"config {sorted(config - _fresh_config())}")
    hooks = [p.name for p in (mirror / "hooks").iterdir() if not p.name.endswith(".sample")] \
        if (mirror / "hooks").is_dir() else []
    if hooks:
        problems.append(f"hooks {sorted(hooks)}")
    for planted in ("objects/info/alternates", "objects/info/http-alternates", "info/grafts", "commondir"):
        if (mirror / planted).exists():
            problems.append(planted)
    if git(["for-each-ref", "--format=%(refname)", "refs/replace/"], git_dir=mirror).strip():
        problems.append("replace refs")
    return problems


def ensure_mirror(mirror: Path) -> list[str]:
    """A mirror fit to fetch into with a token: made when missing, made anew when
    anything planted is found (what was found is returned, for the log)."""
    problems = mirror_problems(mirror) if (mirror / "config").is_file() else []
    if problems or not (mirror / "config").is_file():
        shutil.rmtree(mirror, ignore_errors=True)
        mirror.parent.mkdir(parents=True, exist_ok=True)
        git(["init", "-q", "--bare", str(mirror)])
    return problems


def token_env(server_url: str, token: str) -> dict[str, str]:
    """The read token as git's environment sees it (never a command line, never a file)."""
    if not token:
        return {}
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"http.{server_url}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}


def fetch_commits(mirror: Path, url: str, shas: Sequence[str], *, server_url: str = "", token: str = "") -> list[str]:
    """The commits into the mirror, a ref each (refs/perfci/SHA), so that a clone of the
    mirror reaches them; what was found planted (the mirror was made anew)."""
    found = ensure_mirror(mirror)
    extra = token_env(server_url, token) if token and server_url and url.startswith(server_url + "/") else {}
    git(["fetch", "-q", "--no-tags", url, *(f"+{sha}:refs/perfci/{sha}" for sha in shas)], git_dir=mirror,
        extra_env=extra)
    return found
