"""Verdicts simulated from measured noise: how often the interleaved A/B's verdict
code (`paired.judge_instances`, the real one) raises a false alarm, and how often it
sees a slowdown of a given size, when it is fed with the bursts of real A/A runs on
this runner.

The unit of resampling is what an A/B replicates: the **instance pair**. A simulated
A/B of K instance pairs x P measured pairs per phase draws K instance pairs, with
replacement, from every instance pair of every A/A run, and from each a stretch of P
consecutive pairs: one contiguous window where the instance has P pairs or more, else
moving blocks of MOVING_BLOCK consecutive pairs of that same instance, end to end.
So what is constant over an instance (its setup history, page placement: an offset
of its B/A) and what drifts slowly within it stay in the simulated bursts, as they
do in a real A/B; only a block that pooled pairs across instances could average them
away. (The first simulator did that, drawing two-pair blocks from a pool of every
run: fed synthetic A/As whose true false-alarm rate was 5 %, it reported 0.1 %.)

All metrics of a pair are drawn together (tps with latency, a flush in several
counters). Each metric is centred once over the whole pool (B scaled so that its
pooled B/A is exactly 1): the null holds by construction, while the spread of the
instances around it is kept. A slowdown e is then put on B's time metrics:
throughput x (1 - e), latency / (1 - e); counters per transaction stay as they were
(a CPU cost in the statement path does no extra work).

Assumptions, said beside every number it gives: the A/A runs' instance pairs are
exchangeable draws of this runner's instances; within an instance, dependence beyond
MOVING_BLOCK pairs is kept only inside one window (P up to the instance's length).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfci.judge.burst_verdicts import instance_tables, judged_specs
from perfci.judge.paired import DEFAULT_MIN_EFFECT, default_priors, judge_instances
from perfci.model.bursts import InterleavedRun
from perfci.model.noise import InstancePrior
from perfci.model.verdicts import Outcome

# the exponent of (1 - effect) a slowdown puts on a time metric of side B
TIME_METRICS = {"tps": 1, "qps": 1, "qps_write": 1, "latency_ms_avg": -1, "latency_ms_p95": -1}
MOVING_BLOCK = 4  # consecutive pairs kept together when an instance is shorter than the simulated one

Table = dict[str, tuple[list[float], list[float]]]
ASSUMPTIONS = ("instance pairs of the A/As resampled whole (exchangeable), pairs within one as contiguous "
               f"stretches (moving blocks of {MOVING_BLOCK} where longer than the instance)")


@dataclass(frozen=True)
class SimulatedRate:
    effect: float
    pairs: int                  # per phase and instance pair
    instances: int
    runs: int
    pool: int                   # instance pairs resampled from
    any_regression: float       # share of runs with a judged regression (A/A: the family-wise false alarms)
    any_flag: float             # regression or improvement on any judged metric
    detected: dict[str, float]  # per phase: share of runs whose `<phase>.tps` was called a regression


def instance_pool(runs: Sequence[InterleavedRun], judged_only: bool = True) -> list[Table]:
    """Every instance pair of the A/A runs as its own table (judged metrics only unless
    `judged_only` is False), each metric centred once over the whole pool."""
    pool: list[Table] = []
    for run in runs:
        for table in instance_tables(run):
            wanted = judged_specs(table, []) if judged_only else table
            kept = {k: (list(a), list(b)) for k, (a, b) in table.items() if k in wanted}
            if kept and all(len(a) for a, _ in kept.values()):
                pool.append(kept)
    _centre(pool)
    return pool


def _phase(key: str) -> str:
    return key.split(".", 1)[0]


def phase_lengths(table: Table) -> dict[str, int]:
    """Measured pairs of each phase of an instance: phases of one A/B may have different
    counts (a real A/A's phases do), the metrics of one phase the same."""
    lengths: dict[str, int] = {}
    for key, (a, _) in table.items():
        lengths.setdefault(_phase(key), len(a))
    return lengths


def _centre(pool: list[Table]) -> None:
    keys = set().union(*pool) if pool else set()
    for table in pool:  # a metric absent from an instance's bursts was 0 there (as in instance_tables)
        lengths = phase_lengths(table)
        for key in keys - set(table):
            if _phase(key) in lengths:
                table[key] = ([0.0] * lengths[_phase(key)], [0.0] * lengths[_phase(key)])
    for key in keys:
        holders = [t for t in pool if key in t]
        a = np.array([x for t in holders for x in t[key][0]])
        b = np.array([x for t in holders for x in t[key][1]])
        if (a > 0).all() and (b > 0).all():
            scale = float(np.exp(-np.mean(np.log(b / a))))
        else:
            scale = float(a.sum() / b.sum()) if b.sum() else 1.0
        for t in holders:
            t[key] = (t[key][0], [x * scale for x in t[key][1]])


def stretch(n: int, pairs: int, rng: np.random.Generator) -> list[int]:
    """Indices of `pairs` consecutive pairs of an instance with `n`: one window, or
    moving blocks of MOVING_BLOCK end to end where `pairs` > `n`."""
    if pairs <= n:
        start = int(rng.integers(0, n - pairs + 1))
        return list(range(start, start + pairs))
    block = min(MOVING_BLOCK, n)
    out: list[int] = []
    while len(out) < pairs:
        start = int(rng.integers(0, n - block + 1))
        out += range(start, start + block)
    return out[:pairs]


def draw(pool: list[Table], instances: int, pairs: int, effect: float, rng: np.random.Generator) -> list[Table]:
    tables = []
    for i in rng.integers(0, len(pool), instances):
        source = pool[int(i)]
        # one window for the phases of one length (the same pairs of the instance, as
        # before phases could differ), one per other length: never past a phase's end
        windows: dict[int, list[int]] = {}
        for n in phase_lengths(source).values():
            if n not in windows:
                windows[n] = stretch(n, pairs, rng)
        idx = {phase: windows[n] for phase, n in phase_lengths(source).items()}
        tables.append({key: ([a[j] for j in idx[_phase(key)]], _slowed(key, [b[j] for j in idx[_phase(key)]], effect))
                       for key, (a, b) in source.items()})
    return tables


def simulate(runs: Sequence[InterleavedRun], effect: float, pairs: int, trials: int = 1000, seed: int = 1,
             min_effect: float = DEFAULT_MIN_EFFECT, instances: int = 2,
             priors: Mapping[str, InstancePrior] | None = None) -> SimulatedRate:
    """`trials` A/Bs of `instances` instance pairs x `pairs` measured pairs per phase,
    slowdown `effect` on B, each judged by the real verdict code (default judged
    metrics; `priors`: the between-instance spread the verdict adds, as in `perfci ab`:
    by default the runner default's, `{}` for none)."""
    pool = instance_pool(runs)
    if not pool:
        raise ValueError("no measured burst pairs in these runs")
    rng = np.random.default_rng(seed)
    phases = sorted({key.split(".", 1)[0] for key in pool[0]})
    regressions = flags = 0
    detected = {phase: 0 for phase in phases}
    for _ in range(trials):
        tables = draw(pool, instances, pairs, effect, rng)
        specs = judged_specs({k: v for t in tables for k, v in t.items()}, [])
        rows = judge_instances(tables, specs, min_effect=min_effect,
                               priors=default_priors(specs) if priors is None else priors)
        verdicts = {r.key: r.verdict for r in rows if r.spec is not None}
        regressions += any(v == Outcome.REGRESSION for v in verdicts.values())
        flags += any(v in (Outcome.REGRESSION, Outcome.IMPROVEMENT) for v in verdicts.values())
        for phase in phases:
            detected[phase] += verdicts.get(f"{phase}.tps") == Outcome.REGRESSION
    return SimulatedRate(effect, pairs, instances, trials, len(pool), regressions / trials, flags / trials,
                         {phase: hits / trials for phase, hits in detected.items()})


def _slowed(key: str, values: list[float], effect: float) -> list[float]:
    power = TIME_METRICS.get(key.split(".", 1)[1])
    if not effect or power is None:
        return values
    factor = (1 - effect) ** power
    return [v * factor for v in values]
