"""Noise models learned by `perfci calibrate`: what this runner's noise is, per
runner class, server line, scenario, profile, case and metric, and the smallest
effect it lets a verdict see.

A calibration is a set of interleaved A/A runs (both sides the same server). From
them, per metric:
- `pair_sd`: the spread of one burst pair's difference (log ratio), and `block_sd`
  of the two-pair blocks the A/B verdict judges; `lag1`, their autocorrelation;
- `instance_sd` (with `instance_df`): the spread of one instance pair's true
  difference, log(B/A), beyond what its bursts explain: the variance of the
  instance pairs' mean differences less the mean of their within-instance
  variances (method of moments, floored at 0), one value per instance pair of
  every A/A. The A/B verdict adds it (judge/paired.py);
- `run_cv`: the run-to-run coefficient of variation of the phase-level value: side
  A's mean over its measured bursts, one value per instance pair (the two sides of
  one pair ran side by side on the host at the same time: they are not two
  independent runs), which is what a nightly run against its baseline sees.
Minimum detectable effects at 90 % power (two-sided tests, normal approximation
with t quantiles):
- nightly: one run against a 10-run baseline with compare's 99.5 % interval:
  (t(0.9975) + t(0.90)) x run_cv x sqrt(1 + 1/10);
- A/B of M minutes: the pairs per phase M minutes of measuring buy (measured pair
  durations), blocks of two, Holm over the judged metrics at paired.ALPHA (worst
  case: alpha / m): (t(1 - alpha/2m) + t(0.90)) x block_sd / sqrt(blocks).
The normal approximation is checked against `resample.simulate`, which feeds the
real verdict code with the measured bursts themselves.
"""

from __future__ import annotations

import math
import statistics

from perfci.judge.burst_verdicts import instance_tables
from perfci.judge.paired import (
    ABBA_BLOCK,
    COUNTER_INSTANCE_SD,
    OTHER_COUNTER_INSTANCE_SD,
    RUNNER_DEFAULT_INSTANCE_DF,
    RUNNER_DEFAULT_INSTANCE_SD,
    WORK_CONTENDED_INSTANCE_SD,
    WORK_INSTANCE_SD,
    block_means,
    default_priors,
    differences,
    estimate,
    lag1,
    learned_prior,
)
from perfci.judge.stats import detectable_shift
from perfci.model.bursts import InterleavedRun
from perfci.model.metrics import WORK_METRIC, WRITE_STATEMENTS
from perfci.model.noise import InstancePrior, MetricNoise, NoiseModel

NIGHTLY_BASELINE_RUNS = 10
NIGHTLY_CONFIDENCE = 0.995
MIN_TOLERANCE = 0.01        # compare never judges a change below 1 % a regression
TOLERANCE_SIGMAS = 2.0      # compare's tolerance from the noise: 2 upper-bound run-to-run CVs
CV_BOUND_CONFIDENCE = 0.90


def learn(runs: list[InterleavedRun], created_at: str) -> NoiseModel:
    """A noise model from interleaved A/A runs of one case on one server line; every
    instance pair of every run is one sample of the instance-level spread."""
    first = runs[0]
    per_key: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for table in instance_tables(run):
            for key, (a, b) in table.items():
                slot = per_key.setdefault(key, {"d": [], "blocks": [], "lag": [], "runs": [], "centers": [],
                                                "within": []})
                d, _ = differences(a, b)
                slot["d"] += list(d)
                slot["blocks"] += list(block_means(d, ABBA_BLOCK))
                slot["lag"].append(lag1(d))
                if a:
                    slot["runs"].append(statistics.fmean(a))
                est = estimate(a, b)
                if est is not None and est.scale == "log":
                    slot["centers"].append(math.log(est.ratio))
                    slot["within"].append(est.se ** 2)
    pair_s = {phase: _pair_seconds(run, phase) for run in runs[:1] for phase in run.bursts_per_phase}
    metrics = {}
    for key, slot in per_key.items():
        if len(slot["d"]) < 4 or len(slot["blocks"]) < 2:
            continue
        values = slot["runs"]
        mean = statistics.fmean(values) if values else 0.0
        sd_i = instance_sd(slot["centers"], slot["within"])
        metrics[key] = MetricNoise(
            pair_sd=round(statistics.stdev(slot["d"]), 6), block_sd=round(statistics.stdev(slot["blocks"]), 6),
            lag1=round(statistics.fmean(slot["lag"]), 3),
            run_cv=round(statistics.stdev(values) / mean, 6) if mean > 0 and len(values) > 1 else None,
            pairs=len(slot["d"]), runs=len(values), pair_seconds=round(pair_s.get(key.split(".", 1)[0], 0.0), 3),
            instance_sd=round(sd_i, 6) if sd_i is not None else None,
            instance_df=len(slot["centers"]) - 1 if sd_i is not None else 0)
    return NoiseModel(runner_class=first.runner_class, server_line=first.sides[0].line, scenario=first.scenario,
                      profile=first.profile, case=first.case, scenario_hash=first.scenario_hash, created_at=created_at,
                      host=first.host.hostname, runs=[r.id for r in runs], burst_transactions=first.burst_transactions,
                      metrics=metrics, measure=first.measure)


def instance_sd(centers: list[float], within: list[float]) -> float | None:
    """Between-instance sd from instance pairs' mean differences and their
    within-instance variances (method of moments, floored at 0)."""
    if len(centers) < 2:
        return None
    return math.sqrt(max(0.0, statistics.variance(centers) - statistics.fmean(within)))


def _pair_seconds(run: InterleavedRun, phase: str) -> float:
    bursts = [b for b in run.bursts if b.phase == phase]
    pairs = len({b.index for b in bursts})
    return sum(b.duration_s for b in bursts) / pairs if pairs else 0.0


def priors_for(run: InterleavedRun, model: NoiseModel | None) -> tuple[dict[str, InstancePrior], str]:
    """The between-instance spread an A/B's verdict adds, per key: the case's noise
    model (side A's server line) where there is one, else the runner default; and a
    line saying which."""
    keys = {k for t in instance_tables(run) for k in t}
    learned = model.priors() if model else {}
    priors = floored_priors({**default_priors(keys), **counted_priors(run, keys)}, learned)
    counted = (f"{WORK_INSTANCE_SD:.1%} (instructions of one client reading; {WORK_CONTENDED_INSTANCE_SD:.0%} "
               "writing or several clients), " if run.measure == "work" else "")
    default = (f"runner default: sd {RUNNER_DEFAULT_INSTANCE_SD:.1%} (throughput, latency, CPU), {counted}"
               f"{min(COUNTER_INSTANCE_SD.values()):.0%}-{OTHER_COUNTER_INSTANCE_SD:.0%} (work counters) "
               f"with {RUNNER_DEFAULT_INSTANCE_DF} df")
    if not learned:
        return priors, default
    return priors, (f"noise model of {len(model.runs)} A/As learned {model.created_at[:10]}"  # type: ignore[union-attr]
                    f" where wider than the {default}")


def floored_priors(defaults: dict[str, InstancePrior], learned: dict[str, InstancePrior]) -> dict[str, InstancePrior]:
    """Per key of `defaults`: the learned prior where it is wider, else the default."""
    return {key: learned_prior(learned[key], default) if key in learned else default
            for key, default in defaults.items()}


WRITE_COUNTERS = tuple(f"global_status.{c}" for c in WRITE_STATEMENTS)


def contended(run: InterleavedRun, phase: str) -> bool:
    """A phase whose statements' work depends on timing: it writes (purge and page cleaning
    run beside it) or runs several clients."""
    return run.threads_of(phase) > 1 or any(
        b.metrics.get(c, 0) > 0 for b in run.bursts if b.phase == phase for c in WRITE_COUNTERS)


def counted_priors(run: InterleavedRun, keys) -> dict[str, InstancePrior]:
    """The runner default between-instance spread of counted instructions, by the phase's
    kind (judge/paired.py: one client reading, or writing/several clients)."""
    out = {}
    for key in keys:
        phase, metric = key.split(".", 1)
        if metric == WORK_METRIC:
            sd = WORK_CONTENDED_INSTANCE_SD if contended(run, phase) else WORK_INSTANCE_SD
            out[key] = InstancePrior(sd, RUNNER_DEFAULT_INSTANCE_DF)
    return out


def nightly_mde(noise: MetricNoise, baseline_runs: int = NIGHTLY_BASELINE_RUNS) -> float | None:
    if noise.run_cv is None:
        return None
    return detectable_shift(1 - NIGHTLY_CONFIDENCE, max(baseline_runs - 1, 1),
                            noise.run_cv * math.sqrt(1 + 1 / baseline_runs))


def cycle_seconds(model: NoiseModel, phases: set[str] | None = None) -> float:
    """Seconds of bursts one pair in every phase (or every one of `phases`) takes: an A/B
    runs the same number of pairs in every phase, one phase after the other."""
    return sum({key.split(".", 1)[0]: m.pair_seconds for key, m in model.metrics.items()
                if phases is None or key.split(".", 1)[0] in phases}.values())


def pairs_in(model: NoiseModel, minutes: float) -> int:
    """Burst pairs per phase that `minutes` of measuring buy."""
    cycle = cycle_seconds(model)
    return int(minutes * 60 / cycle) if cycle > 0 else 0


def cv_upper_bound(cv: float, runs: int, confidence: float = CV_BOUND_CONFIDENCE) -> float:
    """One-sided upper confidence bound of a CV learned from `runs` values (chi-square on
    the variance): a CV from 6 runs may well be 1.8 times what they showed."""
    from scipy import stats  # deferred: ~0.25 s of every perfci start (CONTRIBUTING.md, start-up cost)

    df = max(runs - 1, 1)
    return cv * math.sqrt(df / float(stats.chi2.ppf(1 - confidence, df)))


def tolerance(noise: MetricNoise) -> float | None:
    """compare's tolerance for a metric with a learned run-to-run noise: TOLERANCE_SIGMAS
    times the upper bound of its CV, so that a model learned from few A/As does not set a
    tolerance inside the noise (where every other night would be "worse")."""
    if noise.run_cv is None:
        return None
    return max(MIN_TOLERANCE, TOLERANCE_SIGMAS * cv_upper_bound(noise.run_cv, noise.runs))
