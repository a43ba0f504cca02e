"""An explain pass's directory (`<run id>.explain/`): its record and the folded
profiles of its bursts (plain, or gzipped as kept findings store them)."""

from __future__ import annotations

import gzip
from pathlib import Path

from perfci.model.explain import EXPLAIN_FILE, ExplainRun, parse_folded
from perfci.util.errors import BadInput

RECORD = "explain.json"


def read_explain(directory: Path) -> tuple[ExplainRun, dict[str, dict[str, int]]]:
    """(record, {burst profile file: folded stacks}) of an explain directory."""
    if not (directory / RECORD).is_file():
        raise BadInput(f"{directory}: no {RECORD} (not an explain pass's directory)")
    run = EXPLAIN_FILE.load(directory / RECORD)
    folded = {}
    for burst in run.bursts:
        if burst.profile and (text := _folded_text(directory / burst.profile)) is not None:
            folded[burst.profile] = parse_folded(text)
    return run, folded


def _folded_text(path: Path) -> str | None:
    """A burst's folded profile, or its gzipped copy (how kept findings store them)."""
    if path.is_file():
        return path.read_text()
    packed = path.with_name(path.name + ".gz")
    return gzip.decompress(packed.read_bytes()).decode() if packed.is_file() else None
