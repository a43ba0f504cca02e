"""Append-only history of result summaries, and change-point detection over it.

Per-run thresholds miss step changes hidden in noise and slow drifts; E-Divisive
means over a metric's nightly series finds them. We use MongoDB's
`signal-processing-algorithms` (the E-Divisive implementation MongoDB runs on its
own performance CI): one function call on a series, no service or config to run.

Layout: history/<runner class>/<flavor>-<major.minor>/<scenario>/<profile>/<case>.jsonl,
one JSON line per run. The workflows keep this directory on a results branch.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import numpy as np
from pydantic import Field, ValidationError
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

from .errors import BadInput
from .identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from .metrics import flatten
from .result import Model, Result

HISTORY_SCHEMA = "perfci.history/1"
DEFAULT_PVALUE = 0.01
DEFAULT_PERMUTATIONS = 200
MIN_POINTS = 6


class HistoryRecord(Model):
    """One run of one case, as the history keeps it (one JSON line)."""

    schema_: str = Field(HISTORY_SCHEMA, alias="schema", pattern=r"^perfci\.history/1$")
    result_id: str
    date: str = ""
    harness_sha: str | None = None
    scenario_hash: str
    server_version: str | None = None
    metrics: dict[str, float]


def history_path(root: Path, result: Result, follow: Follow = DEFAULT_FOLLOW) -> Path:
    return CaseIdentity.of(result, follow).path(root, ".jsonl")


def summary_line(result: Result) -> HistoryRecord:
    return HistoryRecord(
        result_id=result.id,
        date=result.finished_at,
        harness_sha=result.harness.git_sha,
        scenario_hash=result.scenario.hash,
        server_version=result.server.full_version or result.server.version,
        metrics=flatten(result),
    )


def read_history(path: Path) -> list[HistoryRecord]:
    """Lines of a history file; a torn last line (an interrupted append) is ignored.
    Lines written before records carried a schema are read as /1."""
    entries = []
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue
            raise BadInput(f"{path}:{number}: corrupt history line (not JSON)") from None
        if isinstance(data, dict):
            data.setdefault("schema", HISTORY_SCHEMA)
        try:
            entries.append(HistoryRecord.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            raise BadInput(f"{path}:{number}: not a history record: field {'.'.join(map(str, err['loc']))}: "
                           f"{err['msg']}") from None
    return entries


def append(results: list[Result], root: Path, follow: Follow = DEFAULT_FOLLOW) -> list[tuple[Path, int]]:
    """Append each result's summary to its history file; a result already there is skipped."""
    written: dict[Path, int] = {}
    for result in results:
        if not result.ran:
            continue
        path = history_path(root, result, follow)
        if any(e.result_id == result.id for e in read_history(path)):
            written.setdefault(path, 0)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(summary_line(result).model_dump(mode="json", by_alias=True), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        written[path] = written.get(path, 0) + 1
    return list(written.items())


class ChangePoint(Model):
    index: int
    result_id: str
    date: str
    server_version: str | None
    before_mean: float
    after_mean: float
    change_pct: float | None


def change_points(values: list[float], pvalue: float = DEFAULT_PVALUE,
                  permutations: int = DEFAULT_PERMUTATIONS) -> list[int]:
    """Indices where the series' distribution changes (E-Divisive means)."""
    if len(values) < MIN_POINTS:
        return []
    series = np.asarray(values, dtype=float)
    return sorted(int(i) for i in e_divisive(series, pvalue=pvalue, permutations=permutations))


def detect(entries: list[HistoryRecord], metrics: list[str] | None = None, pvalue: float = DEFAULT_PVALUE,
           permutations: int = DEFAULT_PERMUTATIONS) -> dict[str, list[ChangePoint]]:
    """Change points per metric key, each with the runs around it and the step size."""
    keys = metrics or sorted({k for e in entries for k in e.metrics})
    found: dict[str, list[ChangePoint]] = {}
    for key in keys:
        points = [e for e in entries if key in e.metrics]
        values = [p.metrics[key] for p in points]
        cps = change_points(values, pvalue, permutations)
        if not cps:
            continue
        bounds = [0, *cps, len(values)]
        found[key] = []
        for j, cp in enumerate(cps):
            before = statistics.mean(values[bounds[j]:cp])
            after = statistics.mean(values[cp:bounds[j + 2]])
            found[key].append(ChangePoint(
                index=cp, result_id=points[cp].result_id, date=points[cp].date,
                server_version=points[cp].server_version, before_mean=before, after_mean=after,
                change_pct=(after / before - 1) * 100 if before else None))
    return found


def series(entries: list[HistoryRecord], key: str) -> list[float]:
    return [e.metrics[key] for e in entries if key in e.metrics]
