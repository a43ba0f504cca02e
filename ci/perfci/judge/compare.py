"""Compare current results with their baselines: a verdict per metric, and for each
regression the per-transaction counters that moved most."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from perfci.judge import calibration
from perfci.judge.paired import WORK_INSTANCE_SD
from perfci.judge.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_CV_FLOOR,
    DEFAULT_PRIOR_CV,
    DEFAULT_PRIOR_DF,
    Verdict,
    judge,
    signed_change,
    worse_beyond,
)
from perfci.model.baseline import Baseline, CaseInputs
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.metrics import (
    WORK_METRIC,
    MetricSpec,
    count_follows_timing,
    counters_per_txn,
    default_spec,
    flatten,
    judged_keys,
)
from perfci.model.noise import MetricNoise, NoiseModel
from perfci.model.result import Result
from perfci.model.scenario import CompareSpec, load_scenario
from perfci.model.verdicts import Direction, Outcome
from perfci.util.errors import BadInput


@dataclass(frozen=True)
class Rules:
    """How verdicts were reached; recorded in every comparison output."""

    confidence: float = DEFAULT_CONFIDENCE
    cv_floor: float = DEFAULT_CV_FLOOR
    prior_cv: float = DEFAULT_PRIOR_CV
    prior_df: int = DEFAULT_PRIOR_DF
    follow: Follow = DEFAULT_FOLLOW
    noise_dir: Path | None = None   # where the noise models were read (perfci calibrate); None: baselines/noise


Gate = Literal["metric", "work"]


@dataclass
class MetricRow:
    key: str
    spec: MetricSpec
    baseline: list[float]
    current: list[float]
    verdict: Verdict
    movers: list[tuple[str, float, float]] = field(default_factory=list)
    gate: Gate = "metric"  # "work": a deterministic counter, judged in the work-changed family
    rules: Rules | None = None  # the rules its verdict used (a counted run's instructions: counting's spread)

    @property
    def work_changed(self) -> bool:
        """A deterministic counter that moved beyond its tolerance, either way: the case did
        different work per transaction than its baseline (more is also a regression)."""
        return self.gate == "work" and self.verdict.verdict in (Outcome.REGRESSION, Outcome.IMPROVEMENT)

    @property
    def worse(self) -> bool:
        """A regression, or a change beyond tolerance on the bad side that one run could not
        call (inconclusive): a night like that must not join the baseline it is judged against."""
        v = self.verdict
        if v.verdict == Outcome.REGRESSION:
            return True
        if v.verdict != Outcome.INCONCLUSIVE or v.change_pct is None:
            return False
        return worse_beyond(v.change_pct / 100, v.direction, v.tolerance)


@dataclass
class CaseComparison:
    """One case (scenario, profile, case, server, runner class) compared."""

    results: list[Result]
    baseline: Baseline | None
    baseline_file: Path | None
    rows: list[MetricRow]
    warnings: list[str]
    specs_from: str = "defaults"   # where the metric specs came from
    rules: Rules = field(default_factory=Rules)
    provenance: list[str] = field(default_factory=list)  # a history baseline: reset, exclusions, nights left out

    @property
    def identity(self) -> CaseIdentity:
        return CaseIdentity.of(self.results[0], self.rules.follow)

    @property
    def skipped(self) -> str | None:
        """The skip reason when no result of this case ran (the server cannot run it)."""
        if not any(r.ran for r in self.results):
            return self.results[0].skip_reason or "skipped"
        return None

    @property
    def invalid(self) -> bool:
        """Every result that ran was invalid: nothing was judged (run/validity.py)."""
        ran = [r for r in self.results if r.ran]
        return bool(ran) and not any(r.validity.valid for r in ran)

    @property
    def regressions(self) -> list[MetricRow]:
        return [r for r in self.rows if r.verdict.verdict == Outcome.REGRESSION]

    @property
    def work_changed(self) -> list[MetricRow]:
        return [r for r in self.rows if r.work_changed]

    @property
    def label(self) -> str:
        r = self.results[0]
        return (f"{r.scenario.name} · {r.scenario.profile} · {r.case} · "
                f"{r.server.flavor} {r.server.version} · runner {r.runner_class}")


def worst_first(rows: list[MetricRow], phases: list[str]) -> list[str]:
    """`phases` (in the scenario's order), most suspect first by tonight's comparison: those
    with a judged regression, then by the largest move of any judged metric the bad way
    (a relative change; a phase none of whose metrics has one last), the scenario's order
    on ties. What a many-phase case's reference A/B runs first (sessions/confirm.py): the
    A/B's bursts are new data, so choosing by tonight's does not bias its verdict."""
    def suspicion(phase: str) -> tuple[bool, float]:
        own = [r for r in rows if r.key.split(".", 1)[0] == phase]
        moves = [-signed_change(r.verdict.change_pct / 100, r.verdict.direction) for r in own
                 if r.verdict.change_pct is not None]
        return (any(r.verdict.verdict == Outcome.REGRESSION for r in own), max(moves, default=-math.inf))
    return sorted(phases, key=lambda phase: suspicion(phase), reverse=True)  # (a stable sort keeps ties in order)


def compare_specs(result: Result) -> tuple[list[MetricSpec] | None, str]:
    """The metric specs for a result: the `compare:` rules recorded in its resolved
    scenario; for results from before they were recorded, the scenario file's; else
    the defaults. Returns (specs or None for the defaults, where they came from)."""
    recorded = result.scenario.resolved.get("compare")
    if isinstance(recorded, list) and recorded:
        try:
            return [_spec(CompareSpec.model_validate(c)) for c in recorded], "the result's resolved scenario"
        except ValidationError:
            pass
    if "compare" in result.scenario.resolved:
        return None, "defaults"
    return scenario_specs(result.scenario.name)


def scenario_specs(name: str) -> tuple[list[MetricSpec] | None, str]:
    """The `compare:` rules of the scenario file `name` (None: the defaults), and where
    they came from; a scenario no longer here is judged with the defaults."""
    try:
        scenario, path = load_scenario(name)
    except BadInput:
        return None, "defaults"
    return ([_spec(c) for c in scenario.compare] or None), (f"{path}" if scenario.compare else "defaults")


def _spec(c: CompareSpec) -> MetricSpec:
    d = default_spec(c.metric)
    return MetricSpec(c.metric, c.direction or d.direction, c.tolerance or d.tolerance,
                      d.floor if c.floor is None else c.floor)


def top_movers(phase: str, current: list[Result], baseline: Baseline,
               limit: int = 5) -> list[tuple[str, float, float]]:
    """Counters of `phase` whose per-transaction value changed most (by |log ratio|)."""
    return moved_counters(phase, [counters_per_txn(r) for r in current], [s.counters for s in baseline.samples], limit)


MOVED_MIN_CHANGE = 0.02
MOVED_NOISE_SDS = 3.0


def moved_counters(phase: str, current: list[dict[str, float]], base: list[dict[str, float]],
                   limit: int = 5) -> list[tuple[str, float, float]]:
    """(counter, base mean, current mean) of `phase`'s per-transaction counters that
    moved beyond their noise, most moved first. A counter moved when its mean changed
    by at least MOVED_MIN_CHANGE and, where both sides have two samples or more, by
    more than MOVED_NOISE_SDS standard errors of the difference: a list of counters
    "that moved" must not fill with noise (1 -> 1, or 3 % on a counter that varies 10 %)."""
    prefix = f"{phase}."
    keys = {k for c in [*current, *base] for k in c if k.startswith(prefix)}
    moved = []
    for key in keys:
        cs = [x.get(key, 0.0) for x in current]
        bs = [x.get(key, 0.0) for x in base]
        c = statistics.mean(cs) if cs else 0.0
        b = statistics.mean(bs) if bs else 0.0
        if min(c, b) < 0 or max(c, b) < 1e-3:
            continue  # a level that fell, or too rare per transaction to explain anything
        if abs(c - b) < MOVED_MIN_CHANGE * max(abs(c), abs(b)):
            continue
        if len(cs) >= 2 and len(bs) >= 2:
            se = math.sqrt(statistics.variance(cs) / len(cs) + statistics.variance(bs) / len(bs))
            if abs(c - b) <= MOVED_NOISE_SDS * se:
                continue
        score = math.inf if min(c, b) == 0 else abs(math.log(c / b))
        moved.append((score, key[len(prefix):], b, c))
    moved.sort(key=lambda m: (-m[0], -max(m[2], m[3]), m[1]))
    return [(name, b, c) for _, name, b, c in moved[:limit]]


def compare_case(case: CaseInputs, rules: Rules = Rules()) -> CaseComparison:
    """One case's verdicts: every judged metric against its baseline samples, and with
    a noise model, the work-changed gate over the counters it found deterministic."""
    results, baseline, baseline_file = case.results, case.baseline, case.baseline_file
    warnings: list[str] = [*case.warnings, *(f"invalid run {r.id} is not judged: {'; '.join(r.validity.reasons)}"
                                             for r in results if r.ran and not r.validity.valid)]
    ran = [r for r in results if r.ran and r.validity.valid]
    if not ran:  # a case this server cannot run, or only invalid runs: nothing to judge, the reason is reported
        return CaseComparison(results, baseline, baseline_file, [], warnings, rules=rules,
                              provenance=case.provenance)
    first = ran[0]
    specs, specs_from = compare_specs(first)
    flats = [flatten(r) for r in ran]
    if baseline is not None:
        if {r.scenario.hash for r in ran} != {baseline.scenario_hash}:
            warnings.append("the scenario changed since the baseline was recorded (different scenario hash): "
                            "the comparison may not be like for like")
        mismatches = {m for r in ran if (m := r.host.signature().mismatch(baseline.host))}
        warnings[:0] = sorted(mismatches)  # first: every number below compares two hosts
        if len(baseline.samples) < 3:
            warnings.append(f"the baseline has only {len(baseline.samples)} sample(s): only large changes can be judged")
    model = case.noise_model
    keys: list[tuple[str, MetricSpec, Gate]] = [(k, spec, "metric") for k, spec in judged_keys(first, specs)]
    if first.measure == "work" and (timing := [p for p, data in first.phases.items() if count_follows_timing(data)]):
        warnings.append(f"counted, not judged: {', '.join(timing)} (several clients or writes: their instructions "
                        "per transaction follow lock waits and purge, not only the code; time and the A/B judge them)")
    work_confidence = rules.confidence
    if model is not None and first.measure == "time":  # a model learned timed runs (perfci calibrate)
        specs_from += f" · tolerances from the noise model of {model.created_at[:10]} ({len(model.runs)} A/A runs)"
        work = deterministic_counters(model, ran, {k for k, _, _ in keys})
        keys += [(k, spec, "work") for k, spec in work]
        work_confidence = family_confidence(rules.confidence, len(work))
    rows = []
    for key, spec, gate in keys:
        current = [f[key] for f in flats if key in f] or [c[key] for c in (counters_per_txn(r) for r in ran) if key in c]
        base_values = (baseline.values(key) or [s.counters[key] for s in baseline.samples if key in s.counters]) \
            if baseline else []
        judged_by = counted_rules(rules, first, key)
        learned = model.metrics.get(key) if model else None
        spec, verdict = judge_metric(key, spec, current, base_values, learned,
                                     judged_by, work_confidence if gate == "work" else rules.confidence)
        row = MetricRow(key, spec, base_values, current, verdict, gate=gate, rules=learned_rules(judged_by, learned))
        if verdict.verdict == Outcome.REGRESSION and baseline and not key.startswith("headline."):
            row.movers = top_movers(key.split(".", 1)[0], ran, baseline)
        rows.append(row)
    return CaseComparison(ran, baseline, baseline_file, rows, warnings, specs_from, rules, case.provenance)


def judge_metric(key: str, spec: MetricSpec, current: list[float], base_values: list[float],
                 learned: MetricNoise | None, rules: Rules, confidence: float | None = None) -> tuple[MetricSpec, Verdict]:
    """THE verdict of one metric against its baseline samples: where the runner's noise
    model learned the metric, its tolerance and run-to-run CV replace the spec's and the
    prior (returned: the spec the verdict used; `learned_rules` the rest). `confidence`:
    the interval's level when it is not the rules' (a family's share, family_confidence)."""
    floor = spec.floor if not key.startswith("headline.") else 0.0
    level = rules.confidence if confidence is None else confidence
    used = learned_rules(rules, learned)
    if learned is not None and used is not rules:
        spec = MetricSpec(spec.metric, spec.direction, calibration.tolerance(learned) or spec.tolerance, spec.floor)
    return spec, judge(current, base_values, spec.direction, spec.tolerance, level, used.cv_floor,
                       used.prior_cv, floor, prior_df=used.prior_df)


# A learned run-to-run CV is trusted down to this
LEARNED_CV_FLOOR = 0.0005


def learned_rules(rules: Rules, learned: MetricNoise | None) -> Rules:
    """The spread rules a metric is judged by: the noise model's run-to-run CV (with its
    runs' df) where it learned one, else `rules`. Kept on the row, so that the issue's
    multi-night test judges with the prior tonight's verdict used."""
    if learned is None or learned.run_cv is None:
        return rules
    return replace(rules, cv_floor=LEARNED_CV_FLOOR, prior_cv=learned.run_cv, prior_df=max(learned.runs - 1, 1))


# A counted run's nights never spread less than this (full-scan's counts spread 0.0001-0.01 %
# between fresh servers; a floor keeps a lucky run of identical nights from calling 0.1 %)
COUNTED_CV_FLOOR = 0.0005


def counted_rules(rules: Rules, result: Result, key: str) -> Rules:
    """The rules a key is judged by: the comparison's, except for a counted run's
    instructions per transaction, whose prior run-to-run spread is counting's. Each night
    is a fresh server, so it is the A/B's between-instance default of one client reading
    (judge/paired.py: 0.3 %; the phases whose count follows timing are not judged,
    model/metrics.count_follows_timing), worth the rules' prior df as the time prior is,
    over a floor of COUNTED_CV_FLOOR."""
    phase, _, metric = key.partition(".")
    if result.measure != "work" or metric != WORK_METRIC or phase not in result.phases:
        return rules
    return replace(rules, cv_floor=COUNTED_CV_FLOOR, prior_cv=WORK_INSTANCE_SD)


def family_confidence(confidence: float, members: int) -> float:
    """Each member's level so that the whole family of `members` tests keeps the chance of
    any false flag within 1 - `confidence` (Bonferroni): the work-changed gate judges
    dozens of deterministic counters, which one at a time would flag something by chance
    on a good share of clean nights."""
    return 1 - (1 - confidence) / max(members, 1)


DETERMINISTIC_CV = 0.005


def deterministic_counters(model: NoiseModel, ran: list[Result], taken: set[str]) -> list[tuple[str, MetricSpec]]:
    """Every counter per transaction that the noise model found deterministic under
    fixed work (run CV <= 0.5 %): the work-changed gate, a family of its own (its level
    shared by its members, family_confidence); more work per transaction is a
    regression, less is reported as work changed."""
    present = set().union(*(counters_per_txn(r) for r in ran))
    return [(key, MetricSpec(key.rsplit(".", 1)[-1], Direction.LOWER, calibration.tolerance(m) or calibration.MIN_TOLERANCE))
            for key, m in sorted(model.metrics.items())
            if key not in taken and key in present and m.run_cv is not None and m.run_cv <= DETERMINISTIC_CV]


def compare_cases(cases: list[CaseInputs], rules: Rules = Rules()) -> list[CaseComparison]:
    """Every case judged (store/case_inputs.py load_cases reads what they need)."""
    return [compare_case(case, rules) for case in cases]
