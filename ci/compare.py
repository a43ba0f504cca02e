"""Compare current results with their baselines: a verdict per metric, and for each
regression the per-transaction counters that moved most."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .baseline import Baseline, baseline_path, case_of, host_signature, load_baseline, runner_class_of
from .errors import BadInput
from .metrics import MetricSpec, counters_per_txn, default_spec, flatten, judged_keys
from .scenario import CompareSpec, load_scenario
from .stats import DEFAULT_CONFIDENCE, DEFAULT_CV_FLOOR, DEFAULT_PRIOR_CV, Verdict, judge


@dataclass
class MetricRow:
    key: str
    spec: MetricSpec
    baseline: list[float]
    current: list[float]
    verdict: Verdict
    movers: list[tuple[str, float | None, float | None]] = field(default_factory=list)


@dataclass
class CaseComparison:
    """One case (scenario, profile, case, server, runner class) compared."""

    results: list[dict]
    baseline: Baseline | None
    baseline_file: Path | None
    rows: list[MetricRow]
    warnings: list[str]

    @property
    def skipped(self) -> str | None:
        """The skip reason when no result of this case ran (the server cannot run it)."""
        if all(r.get("status") == "skipped" for r in self.results):
            return self.results[0].get("skip_reason") or "skipped"
        return None

    @property
    def regressions(self) -> list[MetricRow]:
        return [r for r in self.rows if r.verdict.verdict == "regression"]

    @property
    def label(self) -> str:
        r = self.results[0]
        return (f"{r['scenario']['name']} · {r['scenario']['profile']} · {case_of(r)} · "
                f"{r['server']['flavor']} {r['server']['version']} · runner {runner_class_of(r)}")


def case_key(result: dict) -> tuple:
    return (runner_class_of(result), result["server"]["flavor"], result["server"]["version"],
            result["scenario"]["name"], result["scenario"]["profile"], case_of(result))


def compare_specs(scenario_name: str) -> list[MetricSpec] | None:
    """The scenario's `compare:` list (None: the defaults)."""
    try:
        scenario, _ = load_scenario(scenario_name)
    except BadInput:
        return None  # a result of a scenario no longer here: judge with the defaults
    return [_spec(c) for c in scenario.compare] or None


def _spec(c: CompareSpec) -> MetricSpec:
    d = default_spec(c.metric)
    return MetricSpec(c.metric, c.direction or d.direction, c.tolerance or d.tolerance)


def top_movers(phase: str, current: list[dict], baseline: Baseline, limit: int = 5):
    """Counters of `phase` whose per-transaction value changed most (by |log ratio|)."""
    prefix = f"{phase}."
    cur = [counters_per_txn(r) for r in current]
    keys = {k for c in cur for k in c if k.startswith(prefix)} | {
        k for s in baseline.samples for k in s.counters if k.startswith(prefix)}
    moved = []
    for key in keys:
        c = statistics.mean(x.get(key, 0.0) for x in cur)
        b = statistics.mean(s.counters.get(key, 0.0) for s in baseline.samples) if baseline.samples else 0.0
        if min(c, b) < 0 or max(c, b) < 1e-3:
            continue  # a level that fell, or too rare per transaction to explain anything
        score = math.inf if min(c, b) == 0 else abs(math.log(c / b))
        moved.append((score, key[len(prefix):], b, c))
    moved.sort(key=lambda m: (-m[0], -max(m[2], m[3]), m[1]))
    return [(name, b, c) for _, name, b, c in moved[:limit]]


def compare_case(results: list[dict], baseline: Baseline | None, baseline_file: Path | None,
                 confidence: float = DEFAULT_CONFIDENCE, cv_floor: float = DEFAULT_CV_FLOOR,
                 prior_cv: float = DEFAULT_PRIOR_CV) -> CaseComparison:
    warnings = []
    ran = [r for r in results if r.get("status") == "ok"]
    if not ran:  # a case this server cannot run: nothing to judge, the reason is reported
        return CaseComparison(results, baseline, baseline_file, [], [])
    results = ran
    first = results[0]
    specs = compare_specs(first["scenario"]["name"])
    flats = [flatten(r) for r in results]
    if baseline is not None:
        hashes = {r["scenario"]["hash"] for r in results}
        if hashes != {baseline.scenario["hash"]}:
            warnings.append("the scenario changed since the baseline was recorded (different scenario hash): "
                            "the comparison may not be like for like")
        if any(host_signature(r.get("host", {})) != baseline.host for r in results):
            warnings.append(f"host differs from the baseline's ({baseline.host})")
        if len(baseline.samples) < 3:
            warnings.append(f"the baseline has only {len(baseline.samples)} sample(s): only large changes can be judged")
    rows = []
    for key, spec in judged_keys(flats[0], specs):
        current = [f[key] for f in flats if key in f]
        base_values = baseline.values(key) if baseline else []
        verdict = judge(current, base_values, spec.direction, spec.tolerance, confidence, cv_floor, prior_cv)
        row = MetricRow(key, spec, base_values, current, verdict)
        if verdict.verdict == "regression" and baseline and not key.startswith("headline."):
            row.movers = top_movers(key.split(".", 1)[0], results, baseline)
        rows.append(row)
    return CaseComparison(results, baseline, baseline_file, rows, warnings)


def compare(results: list[dict], baseline_file: Path | None = None, baseline_root: Path | None = None,
            confidence: float = DEFAULT_CONFIDENCE, cv_floor: float = DEFAULT_CV_FLOOR,
            prior_cv: float = DEFAULT_PRIOR_CV) -> list[CaseComparison]:
    """Group results by case and compare each group with its baseline."""
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault(case_key(r), []).append(r)
    if baseline_file and len(groups) > 1:
        raise BadInput("--baseline names one baseline file, but the results belong to "
                       f"{len(groups)} different cases; give the results of one case, or use --baseline-dir")
    out = []
    for members in groups.values():
        path = Path(baseline_file) if baseline_file else baseline_path(baseline_root, members[0])
        baseline = load_baseline(path) if (baseline_file or path.exists()) else None
        out.append(compare_case(members, baseline, path, confidence, cv_floor, prior_cv))
    return out
