"""`perfci diff A B`: two sets of results judged against each other, side A standing as
B's baseline, on values only (the command reads the files). A diff is not an A/B: the
runs were not interleaved, so whatever changed between them (the host, the time of day,
other load) is in the difference; what it cannot see is said per case (`blind_spot`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfci.judge.compare import CaseComparison, MetricRow, Rules, compare_cases
from perfci.model.ab_verdict import SideArgs, ab_command
from perfci.model.baseline import CaseInputs, baseline_of_results
from perfci.model.result import Result
from perfci.model.verdicts import Outcome
from perfci.util.errors import BadInput

CaseKey = tuple[str, str, str]  # scenario, profile, case: what two results must share to be diffed


def case_key(r: Result) -> CaseKey:
    return r.scenario.name, r.scenario.profile, r.case


@dataclass(frozen=True)
class DiffPair:
    key: CaseKey
    a: list[Result]
    b: list[Result]


@dataclass(frozen=True)
class Pairing:
    pairs: list[DiffPair]
    only_a: list[CaseKey]
    only_b: list[CaseKey]


def pair_results(a: list[Result], b: list[Result]) -> Pairing:
    """A's and B's results by case (scenario, profile, case). Raises BadInput when no
    case is on both sides (two scenarios, or two profiles, measure different work)."""
    by_a: dict[CaseKey, list[Result]] = {}
    by_b: dict[CaseKey, list[Result]] = {}
    for r in a:
        by_a.setdefault(case_key(r), []).append(r)
    for r in b:
        by_b.setdefault(case_key(r), []).append(r)
    shared = [k for k in by_a if k in by_b]
    if not shared:
        raise BadInput(f"A holds {_keys(by_a)} and B holds {_keys(by_b)}: no case (scenario, profile, case) is on "
                       "both sides; a diff compares the same workload")
    return Pairing([DiffPair(k, by_a[k], by_b[k]) for k in shared], [k for k in by_a if k not in by_b],
                   [k for k in by_b if k not in by_a])


def _keys(groups: dict[CaseKey, list[Result]]) -> str:
    return ", ".join("/".join(k) for k in groups) or "no results"


def diff_cases(pairing: Pairing, rules: Rules, a_label: str) -> list[CaseComparison]:
    """Each pair judged like `compare`: B's results against a baseline made of A's."""
    inputs = []
    for pair in pairing.pairs:
        baseline = baseline_of_results(pair.a, rules.follow)
        warnings = [] if baseline is not None else [
            "no run of A could stand as a baseline (not run, invalid or partial): nothing is judged"]
        if {r.server.full_version or r.server.version for r in pair.a} == \
                {r.server.full_version or r.server.version for r in pair.b}:
            warnings.append("A and B ran the same server version: what differs is the config, the host, the data "
                            "or the time they ran")
        inputs.append(CaseInputs(pair.b, baseline, None, warnings=warnings))
    comparisons = compare_cases(inputs, rules)
    for comp in comparisons:
        comp.baseline_file = None
        comp.provenance = [f"side A: {a_label}"]
    return comparisons


@dataclass(frozen=True)
class BlindSpot:
    """What one diff of a case could not call: per judged metric, the smallest change it
    could (its tolerance, or its interval's half-width where wider; None: no spread was
    measured, one run a side, so no change can be called at all)."""

    runs_a: int
    runs_b: int
    could_call: dict[str, float | None]  # metric key -> smallest callable change (a fraction)

    @property
    def widest(self) -> tuple[str, float | None] | None:
        if not self.could_call:
            return None
        blind = [(k, v) for k, v in self.could_call.items() if v is None]
        return blind[0] if blind else max(self.could_call.items(), key=lambda kv: kv[1] or 0.0)


def could_call(row: MetricRow) -> float | None:
    est = row.verdict.estimate
    if est is None or est.low is None or est.high is None or est.low <= 0:
        return None
    half = math.sqrt(est.high / est.low) - 1  # the interval's half-width on the ratio's log scale
    return max(row.spec.tolerance, half)


def blind_spot(comp: CaseComparison) -> BlindSpot:
    # a metric decided before any interval (its absolute floor, no ratio) has no blind spot to say
    judged = [r for r in comp.rows if r.gate == "metric" and r.verdict.verdict != Outcome.NO_BASELINE
              and (r.verdict.estimate is not None or r.verdict.verdict == Outcome.INCONCLUSIVE)]
    return BlindSpot(runs_a=len(comp.baseline.samples) if comp.baseline else 0, runs_b=len(comp.results),
                     could_call={r.key: could_call(r) for r in judged})


def blind_spot_lines(spot: BlindSpot) -> list[str]:
    """The blind spot in words, for the report."""
    lines = [f"Blind spot: {spot.runs_a} run(s) of A against {spot.runs_b} of B, not interleaved: a change of the "
             "host or its load between them is in the difference."]
    widest = spot.widest
    if widest is None:
        return lines
    key, size = widest
    if size is None:
        lines.append(f"With one run a side no spread is measured (`{key}` and others): no change can be called, only "
                     "seen; run each side 3 times or more, or `perfci ab` (below).")
    else:
        lines.append(f"A change smaller than {size:.1%} on `{key}` (the widest of its {len(spot.could_call)} judged "
                     "metrics: its tolerance or interval) cannot be called here.")
    return lines


def ab_instead(pair: DiffPair) -> str | None:
    """The interleaved A/B that decides what this diff can only suggest: A's server and
    config against B's (None: a side's runs do not say how they ran, or differ)."""
    a = {r.rerun.model_dump_json(): r.rerun for r in pair.a if r.rerun is not None}
    b = {r.rerun.model_dump_json(): r.rerun for r in pair.b if r.rerun is not None}
    if len(a) != 1 or len(b) != 1 or len(pair.a) + len(pair.b) != sum(r.rerun is not None for r in pair.a + pair.b):
        return None
    [ra], [rb] = a.values(), b.values()
    scenario, profile, case = pair.key
    return ab_command(scenario, profile, SideArgs(server=ra.server, config=ra.config),
                      SideArgs(server=rb.server, config=rb.config), case)
