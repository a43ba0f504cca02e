"""A culprit search out of time, on disk beside its case's history (the results
branch): history/.../CASE.culprit.json, written by the nightly, read by the next
night's confirm, removed when a search ends."""

from __future__ import annotations

import json
from pathlib import Path

from perfci.model.culprit import PENDING_SEARCH_FILE, CulpritSearch, PendingSearch
from perfci.model.identity import CaseIdentity
from perfci.util.files import write_atomic

SUFFIX = ".culprit.json"


def pending_path(history_root: Path, case: CaseIdentity) -> Path:
    return case.path(history_root, SUFFIX)


def pending(history_root: Path, case: CaseIdentity) -> CulpritSearch | None:
    path = pending_path(history_root, case)
    return PENDING_SEARCH_FILE.load(path).search if path.is_file() else None


def keep(history_root: Path, case: CaseIdentity, search: CulpritSearch) -> str | None:
    """Keep a search out of time for the next night, or remove a finished one's file:
    the action taken, if any."""
    path = pending_path(history_root, case)
    if search.remaining:
        write_atomic(path, json.dumps(PendingSearch(case=case.slug_path, search=search).dump(), indent=1) + "\n")
        return f"culprit search {path}: resumes next night between {' and '.join(search.remaining)}"
    if path.is_file():
        path.unlink()
        return f"culprit search {path}: ended ({search.summary})"
    return None
