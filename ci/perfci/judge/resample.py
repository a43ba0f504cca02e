"""Verdicts simulated from measured noise: how often the interleaved A/B's verdict
code (`paired.judge_table`, the real one) raises a false alarm, and how often it
sees a slowdown of a given size, when it is fed with the burst noise of real A/A
runs on this runner.

An A/A run's measured pairs are cut into ABBA blocks (two consecutive pairs: the
unit the verdict averages, and the one within which the order effect cancels). A
simulated A/B of P pairs per phase draws P/2 blocks with replacement from the
pooled blocks of every A/A run, all metrics of a block together so that their
correlation (tps with latency, a flush burst in several counters) is kept. Each
metric is centred first (B scaled so that its pooled B/A is exactly 1): the null
holds by construction, and a side bias that the real A/As show is judged by them,
not assumed away or doubled here. A slowdown e is then put on B's time metrics:
throughput x (1 - e), latency / (1 - e); counters per transaction stay as they
were (a CPU cost in the statement path does no extra work).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfci.judge.bursts import judged_specs, pair_table
from perfci.judge.paired import ABBA_BLOCK, DEFAULT_MIN_EFFECT, judge_table
from perfci.model.bursts import InterleavedRun
from perfci.model.verdicts import Outcome

# the exponent of (1 - effect) a slowdown puts on a time metric of side B
TIME_METRICS = {"tps": 1, "qps": 1, "qps_write": 1, "latency_ms_avg": -1, "latency_ms_p95": -1}

Block = dict[str, tuple[list[float], list[float]]]  # key -> (A values, B values) of one ABBA block


@dataclass(frozen=True)
class SimulatedRate:
    effect: float
    pairs: int                  # per phase
    runs: int
    any_regression: float       # share of runs with a judged regression (A/A: the family-wise false alarms)
    any_flag: float             # regression or improvement on any judged metric
    detected: dict[str, float]  # per phase: share of runs whose `<phase>.tps` was called a regression


def blocks_by_phase(runs: Sequence[InterleavedRun], judged_only: bool = True) -> dict[str, list[Block]]:
    """The ABBA blocks of every A/A run, per phase, each metric centred over the pool;
    only the judged metrics unless `judged_only` is False (the others cannot change a
    verdict: they are a separate family)."""
    pooled: dict[str, list[Block]] = {}
    for run in runs:
        table = pair_table(run)
        wanted = judged_specs(table, []) if judged_only else table
        for phase in run.bursts_per_phase:
            keys = [k for k in table if k.split(".", 1)[0] == phase and k in wanted]
            if not keys:
                continue
            n = len(table[keys[0]][0]) // ABBA_BLOCK * ABBA_BLOCK
            start = len(table[keys[0]][0]) - n   # as paired.block_means: a ragged first pair is dropped
            for i in range(start, start + n, ABBA_BLOCK):
                pooled.setdefault(phase, []).append(
                    {k: (list(table[k][0][i:i + ABBA_BLOCK]), list(table[k][1][i:i + ABBA_BLOCK])) for k in keys})
    for blocks in pooled.values():
        _centre(blocks)
    return pooled


def _centre(blocks: list[Block]) -> None:
    keys = set().union(*blocks)
    for blk in blocks:  # a counter that did not move in one run's bursts was 0 there (as in pair_table)
        for key in keys - set(blk):
            blk[key] = ([0.0] * ABBA_BLOCK, [0.0] * ABBA_BLOCK)
    for key in keys:
        a = np.array([x for blk in blocks for x in blk[key][0]])
        b = np.array([x for blk in blocks for x in blk[key][1]])
        if (a > 0).all() and (b > 0).all():
            scale = float(np.exp(-np.mean(np.log(b / a))))
        else:
            scale = float(a.sum() / b.sum()) if b.sum() else 1.0
        for blk in blocks:
            blk[key] = (blk[key][0], [x * scale for x in blk[key][1]])


def simulate(runs: Sequence[InterleavedRun], effect: float, pairs: int, trials: int = 1000, seed: int = 1,
             min_effect: float = DEFAULT_MIN_EFFECT) -> SimulatedRate:
    """`trials` A/Bs of `pairs` measured pairs per phase, slowdown `effect` on B, each
    judged by the real verdict code with the default judged metrics."""
    pools = blocks_by_phase(runs)
    if not pools:
        raise ValueError("no measured burst pairs in these runs")
    rng = np.random.default_rng(seed)
    per_phase = max(1, pairs // ABBA_BLOCK)
    regressions = flags = 0
    detected = {phase: 0 for phase in pools}
    for _ in range(trials):
        table: dict[str, tuple[list[float], list[float]]] = {}
        for blocks in pools.values():
            for i in rng.integers(0, len(blocks), per_phase):
                for key, (a, b) in blocks[i].items():
                    slot = table.setdefault(key, ([], []))
                    slot[0].extend(a)
                    slot[1].extend(_slowed(key, b, effect))
        rows = judge_table(table, judged_specs(table, []), min_effect=min_effect)
        verdicts = {r.key: r.verdict for r in rows if r.spec is not None}
        regressions += any(v == Outcome.REGRESSION for v in verdicts.values())
        flags += any(v in (Outcome.REGRESSION, Outcome.IMPROVEMENT) for v in verdicts.values())
        for phase in pools:
            detected[phase] += verdicts.get(f"{phase}.tps") == Outcome.REGRESSION
    return SimulatedRate(effect, per_phase * ABBA_BLOCK, trials, regressions / trials, flags / trials,
                         {phase: hits / trials for phase, hits in detected.items()})


def _slowed(key: str, values: list[float], effect: float) -> list[float]:
    power = TIME_METRICS.get(key.split(".", 1)[1])
    if not effect or power is None:
        return values
    factor = (1 - effect) ** power
    return [v * factor for v in values]
