"""What an edit of baselines/ changes: per judged metric, the value one night's run
must cross to be judged a regression, before and after; per noise-model metric, the
tolerance and the smallest effects the nightly and an A/B can see. The PR check shows
it (`perfci baseline diff`): a baseline or noise model is a threshold, and a change of
threshold is reviewed as one.

The threshold is found with compare's own verdict (compare.judge_metric) by bisection
over a single run's value, so it is exactly where compare would start flagging."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from perfci.judge import calibration
from perfci.judge.compare import Rules, judge_metric, scenario_specs
from perfci.model.baseline import Baseline, BaselinesTree
from perfci.model.metrics import MetricSpec, spec_table
from perfci.model.noise import MetricNoise, NoiseModel
from perfci.model.verdicts import Direction, Outcome

_STEPS = 48               # bisection steps over log(value): far below any printed digit
_FURTHEST = math.log(100)  # a run 100x worse than the baseline mean is the furthest searched


@dataclass(frozen=True)
class Threshold:
    key: str
    direction: Direction
    tolerance: float
    samples: int
    mean: float
    flagged_at: float | None  # one run worse than this is a regression (None: no single run can be)

    @property
    def flagged_change(self) -> float | None:
        return None if self.flagged_at is None or not self.mean else self.flagged_at / self.mean - 1


def flagged_at(key: str, spec: MetricSpec, base_values: list[float], learned: MetricNoise | None,
               rules: Rules) -> float | None:
    """The value of one run at which compare's verdict turns to regression."""
    mean = statistics.mean(base_values)
    if mean <= 0:
        return None
    sign = -1.0 if spec.direction == Direction.HIGHER else 1.0  # the worse way

    def regressed(u: float) -> bool:
        return judge_metric(key, spec, [mean * math.exp(sign * u)], base_values, learned,
                            rules)[1].verdict == Outcome.REGRESSION

    if not regressed(_FURTHEST):
        return None
    good, bad = 0.0, _FURTHEST
    for _ in range(_STEPS):
        mid = (good + bad) / 2
        good, bad = (good, mid) if regressed(mid) else (mid, bad)
    return mean * math.exp(sign * bad)


def case_thresholds(baseline: Baseline, model: NoiseModel | None, rules: Rules = Rules()) -> list[Threshold]:
    """Every judged phase metric of a pinned baseline, as compare would judge one run of
    its case (the scenario's compare rules; the noise model's tolerance where it has one
    for the baseline's scenario hash)."""
    specs = spec_table(scenario_specs(baseline.case.scenario)[0])
    if model is not None and model.scenario_hash != baseline.scenario_hash:
        model = None  # compare ignores a model of another scenario version
    keys = sorted({k for s in baseline.samples for k in s.metrics})
    out = []
    for key in keys:
        phase, _, name = key.partition(".")
        if phase == "headline" or name not in specs:
            continue
        values = baseline.values(key)
        learned = model.metrics.get(key) if model else None
        used, _ = judge_metric(key, specs[name], values, values, learned, rules)
        out.append(Threshold(key, used.direction, used.tolerance, len(values), statistics.mean(values),
                             flagged_at(key, specs[name], values, learned, rules)))
    return out


@dataclass(frozen=True)
class NoiseLine:
    key: str
    run_cv: float | None
    tolerance: float | None
    nightly_mde: float | None
    block_sd: float
    instance_sd: float | None


def noise_lines(model: NoiseModel) -> list[NoiseLine]:
    return [NoiseLine(key, m.run_cv, calibration.tolerance(m), calibration.nightly_mde(m), m.block_sd, m.instance_sd)
            for key, m in sorted(model.metrics.items())]


@dataclass
class CaseDiff:
    path: str
    before: list[Threshold] | None  # None: the file is new
    after: list[Threshold] | None   # None: the file was deleted


@dataclass
class NoiseDiff:
    path: str
    before: list[NoiseLine] | None
    after: list[NoiseLine] | None


@dataclass
class BaselinesDiff:
    cases: list[CaseDiff]
    models: list[NoiseDiff]

    @property
    def empty(self) -> bool:
        return not self.cases and not self.models


def diff(base: BaselinesTree, head: BaselinesTree, rules: Rules = Rules()) -> BaselinesDiff:
    """Every pinned baseline whose samples or noise model differ between the two
    baselines/ trees (store/baseline_files.py read_tree), with its thresholds on each
    side; every noise model that differs."""
    model_changes = changed(base.model_bytes, head.model_bytes)

    def side(tree: BaselinesTree, rel: str) -> tuple[list[Threshold] | None, str | None]:
        if rel not in tree.cases:
            return None, None
        baseline = tree.cases[rel]
        model_rel = tree.model_of(baseline)
        return case_thresholds(baseline, tree.models.get(model_rel), rules), model_rel

    case_changes = set(changed(base.case_bytes, head.case_bytes))
    cases = []
    for rel in sorted(base.cases.keys() | head.cases.keys()):
        before, model_before = side(base, rel)
        after, model_after = side(head, rel)
        if rel in case_changes or {model_before, model_after} & set(model_changes):
            cases.append(CaseDiff(rel, before, after))
    models = [NoiseDiff(rel,
                        noise_lines(base.models[rel]) if rel in base.models else None,
                        noise_lines(head.models[rel]) if rel in head.models else None)
              for rel in model_changes]
    return BaselinesDiff(cases, models)


def changed(base: dict[str, bytes], head: dict[str, bytes]) -> list[str]:
    return sorted(k for k in base.keys() | head.keys() if base.get(k) != head.get(k))
