"""Which CI runner this process works for, as a short tag in the names of what it leaves
on the host (temp dirs `perfci-TAG-*`, containers labelled perfci.runner=TAG), so that one
runner's job-completed hook cleans its own leftovers and never another runner's on the
same host. The hook (scripts/runner-hooks/job-completed.sh) derives TAG the same way:
`printf '%s\n%s' "$RUNNER_NAME" "$RUNNER_TEMP" | sha256sum | cut -c1-8` (the runner's
name defaults to the host name, so two runners on one host may share it; their
RUNNER_TEMP, inside each runner's own directory, differs)."""

from __future__ import annotations

import hashlib
import os

RUNNER_LABEL = "perfci.runner"


def runner_tag() -> str | None:
    """sha256 of $RUNNER_NAME and $RUNNER_TEMP, 8 hex digits; None outside a GitHub
    Actions runner."""
    name = os.environ.get("RUNNER_NAME")
    if not name:
        return None
    return hashlib.sha256(f"{name}\n{os.environ.get('RUNNER_TEMP', '')}".encode()).hexdigest()[:8]


def temp_prefix() -> str:
    """The start of every temp dir name perfci makes: `perfci-` or `perfci-TAG-`."""
    tag = runner_tag()
    return f"perfci-{tag}-" if tag else "perfci-"
