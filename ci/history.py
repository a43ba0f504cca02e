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
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

from .baseline import slug, case_of, runner_class_of
from .errors import BadInput
from .metrics import flatten

DEFAULT_PVALUE = 0.01
DEFAULT_PERMUTATIONS = 200
MIN_POINTS = 6


def history_path(root: Path, result: dict) -> Path:
    srv, sc = result["server"], result["scenario"]
    major_minor = ".".join(str(srv["version"]).split(".")[:2])
    return (Path(root) / slug(runner_class_of(result)) / f"{srv['flavor']}-{major_minor}"
            / sc["name"] / sc["profile"] / f"{slug(case_of(result))}.jsonl")


def summary_line(result: dict) -> dict:
    return {
        "result_id": result["id"],
        "date": result.get("finished_at", ""),
        "harness_sha": result.get("harness", {}).get("git_sha"),
        "scenario_hash": result["scenario"]["hash"],
        "server_version": result["server"].get("full_version") or result["server"]["version"],
        "metrics": flatten(result),
    }


def read_history(path: Path) -> list[dict]:
    """Lines of a history file; a torn last line (an interrupted append) is ignored."""
    entries = []
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                continue
            raise BadInput(f"{path}:{number}: corrupt history line (not JSON)") from None
    return entries


def append(results: list[dict], root: Path) -> list[tuple[Path, int]]:
    """Append each result's summary to its history file; a result already there is skipped."""
    written: dict[Path, int] = {}
    for result in results:
        if result.get("status") != "ok":
            continue
        path = history_path(root, result)
        if any(e["result_id"] == result["id"] for e in read_history(path)):
            written.setdefault(path, 0)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(summary_line(result), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        written[path] = written.get(path, 0) + 1
    return list(written.items())


def change_points(values: list[float], pvalue: float = DEFAULT_PVALUE,
                  permutations: int = DEFAULT_PERMUTATIONS) -> list[int]:
    """Indices where the series' distribution changes (E-Divisive means)."""
    if len(values) < MIN_POINTS:
        return []
    series = np.asarray(values, dtype=float)
    return sorted(int(i) for i in e_divisive(series, pvalue=pvalue, permutations=permutations))


def detect(entries: list[dict], metrics: list[str] | None = None, pvalue: float = DEFAULT_PVALUE,
           permutations: int = DEFAULT_PERMUTATIONS) -> dict[str, list[dict]]:
    """Change points per metric key, each with the runs around it and the step size."""
    keys = metrics or sorted({k for e in entries for k in e.get("metrics", {})})
    found: dict[str, list[dict]] = {}
    for key in keys:
        points = [e for e in entries if key in e.get("metrics", {})]
        values = [p["metrics"][key] for p in points]
        cps = change_points(values, pvalue, permutations)
        if not cps:
            continue
        bounds = [0, *cps, len(values)]
        found[key] = []
        for j, cp in enumerate(cps):
            before = statistics.mean(values[bounds[j]:cp])
            after = statistics.mean(values[cp:bounds[j + 2]])
            found[key].append({
                "index": cp,
                "result_id": points[cp]["result_id"],
                "date": points[cp]["date"],
                "server_version": points[cp].get("server_version"),
                "before_mean": before,
                "after_mean": after,
                "change_pct": (after / before - 1) * 100 if before else None,
            })
    return found


def series(entries: list[dict], key: str) -> list[dict]:
    return [{"value": e["metrics"][key], "result_id": e["result_id"]} for e in entries if key in e.get("metrics", {})]
