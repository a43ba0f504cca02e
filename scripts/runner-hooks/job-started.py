#!/usr/bin/env python3
"""Runner hook (ACTIONS_RUNNER_HOOK_JOB_STARTED): decide whether this job may run on
this self-hosted benchmark runner, from facts a pull request cannot edit.

A pull_request run uses the workflow file of the PR's merge commit, so an `if:` in
the workflow is no guard against a fork: the PR can delete it. This hook lives on
the runner (installed by scripts/runner-bootstrap, outside any checkout) and reads
the event GitHub delivered:

- schedule, workflow_dispatch, push, merge_group: accepted (only people with write
  access can cause them);
- pull_request / pull_request_target from a branch of this repository: accepted;
- from a fork: accepted only for the `labeled` event of the approval label
  ($PERFCI_APPROVAL_LABEL, default run-perf) applied by someone with write access
  (triage access can label too: not enough), and only if the PR's head is still the
  commit the maintainer labelled (both asked of the GitHub API at $GITHUB_API_URL,
  with the read-only token of $PERFCI_HOOK_TOKEN_FILE; a PR pushed to after the label
  is refused; so is any doubt, e.g. the API not answering). The perf-approval workflow
  removes the label on every push, so an approval covers one commit;
- anything else: refused.

Exit 0 accepts, 1 refuses (the runner then fails the job before any step runs).
Only the Python standard library: it runs before the job installs anything.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request

TRUSTED_EVENTS = {"schedule", "workflow_dispatch", "push", "merge_group"}
# Bots that open PRs from branches of this repository with code nobody reviewed yet (a
# dependency update runs its new packages' code): treated like a fork, label required.
UNREVIEWED_AUTHORS = {"dependabot[bot]", "renovate[bot]"}
PR_EVENTS = {"pull_request", "pull_request_target"}


WRITERS = {"admin", "maintain", "write"}


def api_get(path: str) -> dict:
    """One GET of the GitHub API (with the read-only token in the file named by
    PERFCI_HOOK_TOKEN_FILE, if any)."""
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    request = urllib.request.Request(f"{api}/{path}",
                                     headers={"Accept": "application/vnd.github+json", "User-Agent": "perfci-hook"})
    token_file = os.environ.get("PERFCI_HOOK_TOKEN_FILE")
    if token_file:
        with open(token_file) as f:
            request.add_header("Authorization", f"token {f.read().strip()}")
    with urllib.request.urlopen(request, timeout=15) as response:
        answer = json.load(response)
    if not isinstance(answer, dict):
        raise ValueError(f"GET {path}: not an object")
    return answer


def head_sha_now(repo: str, number: int) -> str:
    """The PR's current head commit."""
    return str(api_get(f"repos/{repo}/pulls/{number}")["head"]["sha"])


def permission_of(repo: str, login: str) -> str:
    """`login`'s access to the repository: admin, maintain, write, triage, read or none."""
    if not login or not all(c.isalnum() or c in "-_[]" for c in login):
        raise ValueError(f"no usable login ({login!r})")
    return str(api_get(f"repos/{repo}/collaborators/{login}/permission").get("permission") or "none")


def decide(event_name: str, event: dict, repo: str) -> tuple[bool, str]:
    if event_name in TRUSTED_EVENTS:
        return True, f"{event_name} event: started by someone with write access"
    if event_name not in PR_EVENTS:
        return False, f"{event_name!r} events do not run on benchmark runners"
    pr = event.get("pull_request") or {}
    head_repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    number = pr.get("number")
    author = (pr.get("user") or {}).get("login")
    if head_repo == repo and author not in UNREVIEWED_AUTHORS:
        return True, f"PR #{number} from a branch of {repo}"
    origin = f"is {author}'s, unreviewed" if head_repo == repo else f"comes from a fork ({head_repo or 'deleted'})"
    label = os.environ.get("PERFCI_APPROVAL_LABEL", "run-perf")
    if event.get("action") != "labeled" or (event.get("label") or {}).get("name") != label:
        return False, (f"PR #{number} {origin}: it runs here only on the "
                       f"'{label}' label event of a maintainer, for the commit they labelled "
                       f"(this is a '{event.get('action')}' event)")
    labeller = str((event.get("sender") or {}).get("login") or "")
    try:
        level = permission_of(repo, labeller)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return False, (f"PR #{number} {origin}: cannot confirm that {labeller or 'the labeller'} may approve it "
                       f"({exc}; the hook asks the GitHub API with the read-only token of PERFCI_HOOK_TOKEN_FILE); "
                       "refusing")
    if level not in WRITERS:
        return False, (f"PR #{number} {origin}: the '{label}' label was applied by {labeller}, who has {level} "
                       "access; only people with write access approve a run on the benchmark runners")
    approved = (pr.get("head") or {}).get("sha")
    try:
        current = head_sha_now(repo, int(number))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return False, f"PR #{number} from a fork: cannot confirm its head with the GitHub API ({exc}); refusing"
    if not approved or current != approved:
        return False, (f"PR #{number} from a fork: the '{label}' label approved {str(approved)[:12]}, "
                       f"but the head is now {current[:12]}; a maintainer must label the new commit")
    return True, f"PR #{number} from a fork, head {current[:12]} approved by the '{label}' label of {labeller}"


def main() -> int:
    event_name = os.environ.get("GITHUB_EVENT_NAME", "")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    try:
        with open(os.environ["GITHUB_EVENT_PATH"]) as f:
            event = json.load(f)
    except (KeyError, OSError, ValueError) as exc:
        print(f"perfci job-started: refused: cannot read the event ({exc})", file=sys.stderr)
        return 1
    ok, why = decide(event_name, event if isinstance(event, dict) else {}, repo)
    print(f"perfci job-started: {'accepted' if ok else 'refused'}: {why}", file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
