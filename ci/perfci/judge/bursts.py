"""From an interleaved A/B's bursts to the paired table and its verdicts."""

from __future__ import annotations

import statistics

from perfci.judge.paired import InstancePrior, PairedVerdict, PairTable, judge_instances
from perfci.model.bursts import Burst, InterleavedRun
from perfci.model.metrics import DEFAULT_COMPARED, MetricSpec, default_spec
from perfci.model.scenario import CompareSpec

BUSY_BURST_CORES = 0.5  # other processes' CPU during a burst beyond which its pair is dropped


def busy(burst: Burst) -> bool:
    return (burst.host_cpu or {}).get("others", 0.0) > BUSY_BURST_CORES


def busy_pairs(run: InterleavedRun) -> dict[str, int]:
    """Per phase: measured pairs dropped because the host was busy during one of their bursts."""
    return {phase: len({(b.instance, b.index) for b in run.bursts if b.phase == phase and not b.warmup and busy(b)})
            for phase in run.bursts_per_phase}


def instance_tables(run: InterleavedRun) -> list[dict[str, tuple[list[float], list[float]]]]:
    """Per instance pair: key '<phase>.<metric>' -> (A values, B values) over its
    measured pairs, in order. A metric absent from a burst (a counter that did not
    move) counts as 0 there. A pair with a burst during which other processes used
    the CPU (beyond BUSY_BURST_CORES) is dropped: the validity gate at burst scale,
    by the host's load, never by the burst's own numbers."""
    return [_table([b for b in run.bursts if b.instance == pair.index], run.bursts_per_phase)
            for pair in run.instances]


def pair_table(run: InterleavedRun) -> dict[str, tuple[list[float], list[float]]]:
    """All instance pairs' tables end to end (for what does not judge: the order of
    instances is kept, pairs of one instance stay consecutive)."""
    table: dict[str, tuple[list[float], list[float]]] = {}
    tables = instance_tables(run)
    keys = list(dict.fromkeys(k for t in tables for k in t))
    for t in tables:
        n = len(next(iter(t.values()))[0]) if t else 0
        for key in keys:
            a, b = t.get(key, ([0.0] * n, [0.0] * n))
            slot = table.setdefault(key, ([], []))
            slot[0].extend(a)
            slot[1].extend(b)
    return table


def _table(bursts: list[Burst], phases) -> dict[str, tuple[list[float], list[float]]]:
    table: dict[str, tuple[list[float], list[float]]] = {}
    for phase in phases:
        measured = [b for b in bursts if b.phase == phase and not b.warmup]
        dropped = {b.index for b in measured if busy(b)}
        by_pair: dict[int, dict[str, dict[str, float]]] = {}
        for b in measured:
            if b.index not in dropped:
                by_pair.setdefault(b.index, {})[b.side] = b.metrics
        pairs = [p for _, p in sorted(by_pair.items()) if "a" in p and "b" in p]
        keys = sorted({k for p in pairs for side in p.values() for k in side})
        for key in keys:
            table[f"{phase}.{key}"] = ([p["a"].get(key, 0.0) for p in pairs], [p["b"].get(key, 0.0) for p in pairs])
    return table


def judged_specs(table: PairTable, compare: list[CompareSpec]) -> dict[str, MetricSpec]:
    """The keys that can fail the A/B: the scenario's `compare:` metrics (default:
    throughput, latency and the key work counters) in every phase."""
    specs = ({c.metric: _spec(c) for c in compare} if compare else {m: default_spec(m) for m in DEFAULT_COMPARED})
    out = {}
    for key in table:
        metric = key.split(".", 1)[1]
        if metric in specs:
            out[key] = specs[metric]
    return out


def _spec(c: CompareSpec) -> MetricSpec:
    d = default_spec(c.metric)
    return MetricSpec(c.metric, c.direction or d.direction, c.tolerance or d.tolerance,
                      d.floor if c.floor is None else c.floor)


def judge_run(run: InterleavedRun, compare: list[CompareSpec], min_effect: float,
              min_effects: dict[str, float] | None = None,
              priors: dict[str, InstancePrior] | None = None) -> list[PairedVerdict]:
    tables = instance_tables(run)
    specs = judged_specs({k: v for t in tables for k, v in t.items()}, compare)
    return judge_instances(tables, specs, min_effect=min_effect, min_effects=min_effects, priors=priors)


def burst_summary(run: InterleavedRun) -> dict[str, float]:
    """Mean burst duration per side (for the time-to-verdict figures)."""
    return {side: statistics.mean(b.duration_s for b in run.bursts if b.side == side) for side in ("a", "b")}
