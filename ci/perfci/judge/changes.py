"""Change points over a metric's nightly series, and the ones that persist.

Per-run thresholds miss step changes hidden in noise and slow drifts; E-Divisive
means over a metric's nightly series finds them. We use MongoDB's
`signal-processing-algorithms` (the E-Divisive implementation MongoDB runs on its
own performance CI): one function call on a series, no service or config to run.

E-Divisive (history.change_points) splits a metric's nightly series into segments.
A one-night spike is a segment of one or two nights: segments shorter than
`MIN_SEGMENT` are not levels and are left out, so a spike never opens an issue and
the levels on both sides of it are compared directly. A change is reported when a
level is worse than the one before it beyond the metric's tolerance and beyond the
nights' noise (one-sided Welch t test, LEVEL_ALPHA) AND the newest
level is still that much worse (a slowdown that recovered is not news). Its
location is the first night of the worse level: the issue's identity (with the
fingerprint of the case and metric) and the point an accepted change resets the
baseline at.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

from perfci.judge.stats import below_floor, worse_beyond
from perfci.model.base import StrictModel
from perfci.model.history import HistoryRecord
from perfci.model.metrics import MetricSpec
from perfci.model.verdicts import Direction

DEFAULT_PVALUE = 0.01
DEFAULT_PERMUTATIONS = 200
PERMUTATION_SEED = 20261124
MIN_POINTS = 6
LEVEL_ALPHA = 0.005  # a worse level against the one before it (one-sided Welch), see _significant
MIN_SEGMENT = 3   # nights: a level must last this long to count (opened by the 3rd night of a step)


class ChangePoint(StrictModel):
    index: int
    result_id: str
    date: str
    server_version: str | None
    before_mean: float
    after_mean: float
    change_pct: float | None


def change_points(values: list[float], pvalue: float = DEFAULT_PVALUE,
                  permutations: int = DEFAULT_PERMUTATIONS) -> list[int]:
    """Indices where the series' distribution changes (E-Divisive means)."""
    if len(values) < MIN_POINTS:
        return []
    series = np.asarray(values, dtype=float)
    # the permutation test shuffles with numpy's global generator: seeded here (and put
    # back) so that the same history gives the same change points on every re-run
    state = np.random.get_state()
    np.random.seed(PERMUTATION_SEED)
    try:
        return sorted(int(i) for i in e_divisive(series, pvalue=pvalue, permutations=permutations))
    finally:
        np.random.set_state(state)


def detect(entries: list[HistoryRecord], metrics: list[str] | None = None, pvalue: float = DEFAULT_PVALUE,
           permutations: int = DEFAULT_PERMUTATIONS) -> dict[str, list[ChangePoint]]:
    """Change points per metric key, each with the runs around it and the step size."""
    keys = metrics or sorted({k for e in entries for k in e.metrics})
    found: dict[str, list[ChangePoint]] = {}
    for key in keys:
        points = [e for e in entries if key in e.metrics]
        values = [p.metrics[key] for p in points]
        cps = change_points(values, pvalue, permutations)
        if not cps:
            continue
        bounds = [0, *cps, len(values)]
        found[key] = []
        for j, cp in enumerate(cps):
            before = statistics.mean(values[bounds[j]:cp])
            after = statistics.mean(values[cp:bounds[j + 2]])
            found[key].append(ChangePoint(
                index=cp, result_id=points[cp].result_id, date=points[cp].date,
                server_version=points[cp].server_version, before_mean=before, after_mean=after,
                change_pct=(after / before - 1) * 100 if before else None))
    return found


def series(entries: list[HistoryRecord], key: str) -> list[float]:
    return [e.metrics[key] for e in entries if key in e.metrics]


@dataclass(frozen=True)
class Change:
    key: str
    spec: MetricSpec
    before: list[HistoryRecord]   # the level before the change
    after: list[HistoryRecord]    # the worse level, from the change location on
    now: list[HistoryRecord]      # the newest level (the same as `after` unless it moved again)
    series: list[float]
    index: int                    # where in `series` the change is

    @property
    def location(self) -> HistoryRecord:
        return self.after[0]

    def mean(self, records: list[HistoryRecord]) -> float:
        return statistics.mean(r.metrics[self.key] for r in records)

    @property
    def change_pct(self) -> float:
        return (self.mean(self.after) / self.mean(self.before) - 1) * 100


def _worse(spec: MetricSpec, before: float, after: float) -> bool:
    if before <= 0 or below_floor(before, after, spec.floor):
        return False
    return worse_beyond(after / before - 1, spec.direction, spec.tolerance)


def persisting_changes(records: list[HistoryRecord], key: str, spec: MetricSpec, pvalue: float = DEFAULT_PVALUE,
                       permutations: int = DEFAULT_PERMUTATIONS) -> list[Change]:
    """Regressions in `records` (one case, oldest first) on `key` that still hold tonight."""
    points = [r for r in records if key in r.metrics]
    values = [r.metrics[key] for r in points]
    bounds = [0, *change_points(values, pvalue, permutations), len(values)]
    levels = [points[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b - a >= MIN_SEGMENT]
    if len(levels) < 2:
        return []
    mean = lambda level: statistics.mean(r.metrics[key] for r in level)  # noqa: E731
    now = levels[-1]
    return [Change(key, spec, before, after, now, values, points.index(after[0]))
            for before, after in zip(levels, levels[1:], strict=False)
            if _worse(spec, mean(before), mean(after)) and _worse(spec, mean(before), mean(now))
            and _significant(spec, [r.metrics[key] for r in before], [r.metrics[key] for r in after])]


def _significant(spec: MetricSpec, before: list[float], after: list[float]) -> bool:
    """The worse level differs from the one before beyond the nights' own noise: a
    one-sided Welch t test at LEVEL_ALPHA. E-Divisive re-run every night over the same
    noisy series splits it somewhere sooner or later; with a run-to-run CV above the
    tolerance, a 3-night level 5 % lower is noise as often as not."""
    if len(before) < 2 or len(after) < 2:
        return False
    if statistics.pstdev(before) == 0 and statistics.pstdev(after) == 0:
        return statistics.mean(before) != statistics.mean(after)
    from scipy import stats  # deferred: ~0.25 s of every perfci start (CONTRIBUTING.md, start-up cost)

    worse_side = "less" if spec.direction == Direction.HIGHER else "greater"
    return float(stats.ttest_ind(after, before, equal_var=False, alternative=worse_side).pvalue) < LEVEL_ALPHA
