"""Stored baselines: run-level samples of every metric, with provenance.

Layout: baselines/<runner class>/<flavor>-<version>/<scenario>/<profile>/<case>.json
One file per case holds the last `window` accepted samples (not one number), each
with the result id, date, harness sha and scenario hash it came from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import BadInput
from .files import write_json_atomic
from .metrics import counters_per_txn, flatten
from .scenario import validation_message

BASELINE_SCHEMA = "perfci.baseline/1"
DEFAULT_WINDOW = 10
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "baselines"


class Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result_id: str
    date: str
    harness_sha: str
    scenario_hash: str
    host: dict
    forced: list[str] = []
    metrics: dict[str, float]
    counters: dict[str, float] = {}
    intervals: dict[str, list[float]] = {}


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["perfci.baseline/1"] = Field(BASELINE_SCHEMA, alias="schema")
    runner_class: str
    server: dict           # flavor, version
    scenario: dict         # name, profile, case, hash (of the newest sample)
    host: dict             # the host signature every sample must match
    window: int = Field(DEFAULT_WINDOW, ge=1)
    samples: list[Sample] = []

    def values(self, key: str) -> list[float]:
        return [s.metrics[key] for s in self.samples if key in s.metrics]

    def dump(self) -> dict:
        return self.model_dump(by_alias=True)


def host_signature(host: dict) -> dict:
    """What makes two hosts the same kind for benchmarking purposes."""
    return {"cpu_model": host.get("cpu_model"), "cpus": host.get("cpus"),
            "memory_gib": round((host.get("memory_bytes") or 0) / 2**30)}


def case_of(result: dict) -> str:
    return result.get("case") or "default"


def runner_class_of(result: dict) -> str:
    return result.get("host", {}).get("runner_class") or "local"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "__", text)


def baseline_path(root: Path, result: dict) -> Path:
    srv, sc = result["server"], result["scenario"]
    return (Path(root) / slug(runner_class_of(result)) / f"{srv['flavor']}-{srv['version']}"
            / sc["name"] / sc["profile"] / f"{slug(case_of(result))}.json")


def load_baseline(path: Path) -> Baseline:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such baseline") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read baseline: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: corrupt baseline (not JSON: {exc.msg} at line {exc.lineno}); "
                       "restore it from git or rebuild it with 'perfci baseline update'") from None
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        raise BadInput(validation_message(f"{path} (corrupt baseline)", exc)) from None


def sample_from(result: dict, forced: list[str]) -> Sample:
    return Sample(
        result_id=result["id"],
        date=result.get("finished_at", ""),
        harness_sha=result.get("harness", {}).get("git_sha", "unknown"),
        scenario_hash=result["scenario"]["hash"],
        host=host_signature(result.get("host", {})),
        forced=forced,
        metrics=flatten(result),
        counters=counters_per_txn(result),
        intervals={p: [iv["tps"] for iv in d.get("intervals", [])] for p, d in result.get("phases", {}).items()},
    )


def refusals(result: dict, baseline: Baseline | None) -> list[str]:
    """Why a result may not join a baseline (empty: it may)."""
    why = []
    if result.get("status") != "ok":
        why.append(f"run status is {result.get('status')!r}, not 'ok'")
    expected = [s["phase"] for s in result["scenario"].get("resolved", {}).get("steps", []) if s.get("kind") == "measure"]
    missing = [p for p in expected if not result.get("phases", {}).get(p, {}).get("metrics")]
    if missing or not result.get("phases"):
        why.append(f"partial run: phases without metrics: {', '.join(missing) or 'all'}")
    if baseline is None:
        return why
    if result["scenario"]["hash"] != baseline.scenario["hash"]:
        why.append(f"scenario hash {result['scenario']['hash'][:19]} differs from the baseline's "
                   f"{baseline.scenario['hash'][:19]} (the scenario or profile changed)")
    if result["scenario"]["profile"] != baseline.scenario["profile"]:
        why.append(f"profile {result['scenario']['profile']!r} is not the baseline's {baseline.scenario['profile']!r}")
    if runner_class_of(result) != baseline.runner_class:
        why.append(f"runner class {runner_class_of(result)!r} is not the baseline's {baseline.runner_class!r}")
    if host_signature(result.get("host", {})) != baseline.host:
        why.append(f"host {host_signature(result.get('host', {}))} does not match the baseline's {baseline.host}")
    return why


def new_baseline(result: dict, window: int) -> Baseline:
    sc = result["scenario"]
    return Baseline(
        runner_class=runner_class_of(result),
        server={"flavor": result["server"]["flavor"], "version": result["server"]["version"]},
        scenario={"name": sc["name"], "profile": sc["profile"], "case": case_of(result), "hash": sc["hash"]},
        host=host_signature(result.get("host", {})),
        window=window,
    )


def update(results: list[tuple[Path, dict]], root: Path | None = None, path: Path | None = None,
           window: int | None = None, force: bool = False) -> list[tuple[Path, int, int]]:
    """Add accepted results to their baselines (created when missing).

    Every result is checked before anything is written; one refused result (without
    --force) refuses the whole update. Returns (path, samples added, samples kept)."""
    grouped: dict[Path, list[tuple[Path, dict]]] = {}
    for src, result in results:
        if result.get("status") == "skipped":
            continue  # a case this server cannot run has nothing to add (its reason is in the report)
        target = Path(path) if path else baseline_path(root or DEFAULT_ROOT, result)
        grouped.setdefault(target, []).append((src, result))
    plans = []
    for target, members in grouped.items():
        baseline = load_baseline(target) if target.exists() else None
        added = 0
        for src, result in members:
            reasons = refusals(result, baseline)
            if reasons and not force:
                raise BadInput(f"{src}: refused for baseline {target}: {'; '.join(reasons)} (use --force to accept it anyway; "
                               "that is recorded in the sample)")
            if baseline is None:
                baseline = new_baseline(result, window or DEFAULT_WINDOW)
            if any(s.result_id == result["id"] for s in baseline.samples):
                continue  # already in: updating twice with the same result is harmless
            baseline.samples.append(sample_from(result, forced=reasons))
            baseline.scenario["hash"] = result["scenario"]["hash"]
            added += 1
        plans.append((target, baseline, added))
    written = []
    for target, baseline, added in plans:
        if window:
            baseline.window = window
        baseline.samples = baseline.samples[-baseline.window:]  # rolling window: newest samples win
        write_json_atomic(target, baseline.dump())
        for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by an update killed mid-write
            stale.unlink(missing_ok=True)
        written.append((target, added, len(baseline.samples)))
    return written
