"""Change points over a metric's nightly series, and the ones that persist.

Per-run thresholds miss step changes hidden in noise and slow drifts; E-Divisive
means over a metric's nightly series finds them. We use MongoDB's
`signal-processing-algorithms` (the E-Divisive implementation MongoDB runs on its
own performance CI): one function call on a series, no service or config to run. Its
search is run here (e_divisive) with a permutation test that stops once it cannot be
significant: the library's change points, in a fraction of the time on a quiet series.

E-Divisive (history.change_points) splits a metric's nightly series into segments.
A one-night spike is a segment of one or two nights: segments shorter than
`MIN_SEGMENT` are not levels and are left out, so a spike never opens an issue and
the levels on both sides of it are compared directly. A change is reported when a
level is worse than the one before it beyond the metric's tolerance and beyond the
nights' noise, with the search for the split accounted for (a permutation test of the
largest step over every split of the series up to the worse level's end, step_p, at the
false-issue budget's level per case and look, shared over the case's judged metrics) AND the newest level is still that much worse
(a slowdown that recovered is not news). Its location is the first night of the worse
level: the issue's identity (with the fingerprint of the case and metric) and the point
an accepted change resets the baseline at.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from dataclasses import dataclass

import numpy as np

from perfci.judge.budget import IssueBudget
from perfci.judge.stats import below_floor, worse_beyond
from perfci.model.base import StrictModel
from perfci.model.history import HistoryRecord
from perfci.model.metrics import MetricSpec
from perfci.model.verdicts import Direction

DEFAULT_PVALUE = 0.01
DEFAULT_PERMUTATIONS = 200
PERMUTATION_SEED = 20261124
MIN_POINTS = 6
# Per case and look (a night): the chance that pure noise on its judged metrics gets a
# worse level called, shared equally over those metrics (Bonferroni); see step_p. The
# default is the change points' share of the default false-issue budget (judge/budget.py:
# 0.1 % per case and night, so that a month of nightly looks stays within it by the union
# bound); the nightly passes its own budget's.
CHANGE_ALPHA = IssueBudget().level("change")
LEVEL_PERMUTATIONS = 10000  # orderings at least; more where the level needs the resolution (step_p)
PERMUTATION_BATCH = 10000
MIN_SEGMENT = 3   # nights: a level must last this long to count (opened by the 3rd night of a step)


class ChangePoint(StrictModel):
    index: int
    result_id: str
    date: str
    server_version: str | None
    before_mean: float
    after_mean: float
    change_pct: float | None


def e_divisive(series: np.ndarray, pvalue: float, permutations: int) -> list[int]:
    """E-Divisive means exactly as signal_processing_algorithms' `e_divisive` computes it
    (its distance matrix and t statistics, the same shuffles from numpy's global
    generator, in the same order), except that a permutation test stops as soon as it can
    no longer be significant: more than pvalue x (permutations + 1) shuffles at least as
    extreme. On a series with no change that is after a few shuffles, not all of them.
    The search it cuts short is the last one (no change point: the search ends), so the
    change points are the library's; tests/judge/test_change_points.py holds the two equal."""
    # imported here: with structlog it is ~0.2 s of every perfci start-up (-X importtime), and only the
    # nightly's change points need it
    from signal_processing_algorithms.energy_statistics.energy_statistics import (
        _calculate_t_stats,
        _get_distance_matrix,
        _get_valid_input,
    )
    distances = _get_distance_matrix(_get_valid_input(series))
    found: list[int] = []
    memo: dict[tuple[int, int], tuple[int, float]] = {}
    while True:
        windows = list(itertools.pairwise([0, *sorted(found), len(distances)]))
        candidates = []
        for a, b in windows:
            if (a, b) not in memo:
                stats = _calculate_t_stats(distances[a:b, a:b])
                idx = int(np.argmax(stats))
                memo[(a, b)] = (idx + a, stats[idx])
            candidates.append(memo[(a, b)])
        index, statistic = max(candidates, key=lambda c: c[1])
        as_extreme, significant = 0, True
        for _ in range(permutations):
            shuffled = []
            for a, b in windows:
                rows = np.arange(b - a) + a
                np.random.shuffle(rows)
                shuffled.append(max(_calculate_t_stats(distances[np.ix_(rows, rows)])))
            if max(shuffled) >= statistic:
                as_extreme += 1
                if as_extreme / (permutations + 1) > pvalue:
                    significant = False  # whatever the other shuffles give
                    break
        if not significant or not index:  # (the library stops at a change point at index 0 too)
            return found
        found.append(index)


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
    p: float = 0.0                # step_p of the series up to the worse level's end

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


def persisting_changes(records: list[HistoryRecord], key: str, spec: MetricSpec, family: int = 1,
                       pvalue: float = DEFAULT_PVALUE, permutations: int = DEFAULT_PERMUTATIONS,
                       alpha: float = CHANGE_ALPHA) -> list[Change]:
    """Regressions in `records` (one case, oldest first) on `key` that still hold tonight;
    `family`: how many metrics of the case are searched (they share `alpha`, the level per
    case and look)."""
    level = alpha / max(family, 1)
    points = [r for r in records if key in r.metrics]
    values = [r.metrics[key] for r in points]
    bounds = [0, *change_points(values, pvalue, permutations), len(values)]
    levels = [points[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b - a >= MIN_SEGMENT]
    if len(levels) < 2:
        return []
    mean = lambda level: statistics.mean(r.metrics[key] for r in level)  # noqa: E731
    now = levels[-1]
    found = []
    for before, after in zip(levels, levels[1:], strict=False):
        if not (_worse(spec, mean(before), mean(after)) and _worse(spec, mean(before), mean(now))):
            continue
        p = step_p(spec, values[:points.index(after[-1]) + 1], level)
        if p <= level:
            found.append(Change(key, spec, before, after, now, values, points.index(after[0]), p))
    return found


def step_p(spec: MetricSpec, nights: list[float], level: float = CHANGE_ALPHA) -> float:
    """How often the series up to the end of the worse level, its nights in a random
    order, shows a step toward worse as large as its own: the statistic is the largest
    mean step over every split leaving MIN_SEGMENT nights on each side, weighted
    sqrt(k (n - k) / n) (the CUSUM scan; the nights' spread is the same in every
    ordering), against the same maximum over LEVEL_PERMUTATIONS seeded random orderings.
    E-Divisive chose the split (and the levels around it) that look most like a step; a
    test of that one split (Welch, before) ignored the search, and pure noise got a change
    point in 3-10 % of 12-60-night series per metric; here every split of the series is
    searched in each ordering too. The smallest p is about 1 / C(n, k) for a step of k
    nights: 3 nights after 14 (680 orderings) cannot reach 0.001 whatever the step, 4 can.

    The orderings: enough for `level` to be reachable (10 / level, at least
    LEVEL_PERMUTATIONS; (1 + as large) / (1 + drawn) is a valid p at any count), drawn
    in batches; the draw stops early once as many orderings were as large as p <= level
    would allow at the full count (the verdict at `level` is then already "no": stopping
    changes no decision, only the p it reports, which is then above `level`). A series
    with no step stops in the first batch.
    """
    return _step_p(tuple(nights), spec.direction == Direction.HIGHER, level)


@functools.lru_cache(maxsize=4096)
def _step_p(nights: tuple[float, ...], higher_is_better: bool, level: float) -> float:
    # cached: a night asks the same series twice (the standing change points, then the issues)
    values = np.asarray(nights, dtype=float)
    n = len(values)
    if n < 2 * MIN_SEGMENT or np.ptp(values) == 0:
        return 1.0
    # The mean step at split k, (S_n - S_k)/(n - k) - S_k/k, weighted sqrt(k (n - k) / n), is
    # -S_k sqrt(n / (k (n - k))) once the nights are centred (S_n = 0 in every ordering): one
    # cumulative sum and one product per ordering, the cost of a night's change points.
    worse = -1.0 if higher_is_better else 1.0
    centred = values - values.mean()
    splits = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    weight = -worse * np.sqrt(n / (splits * (n - splits)))

    def largest_step(orderings: np.ndarray) -> np.ndarray:
        sums = np.cumsum(orderings[:, :n - MIN_SEGMENT], axis=1)[:, MIN_SEGMENT - 1:]
        return (sums * weight).max(axis=1)

    observed = float(largest_step(centred[None, :])[0])
    total = max(LEVEL_PERMUTATIONS, math.ceil(10 / level))
    allowed = level * (1 + total) - 1  # as many as large, at most, for p <= level at the full count
    rng = np.random.default_rng(PERMUTATION_SEED)
    as_large = drawn = 0
    while drawn < total:
        batch = min(PERMUTATION_BATCH, total - drawn)
        orderings = np.tile(centred, (batch, 1))
        rng.permuted(orderings, axis=1, out=orderings)
        as_large += int(np.sum(largest_step(orderings) >= observed - 1e-12 * abs(observed)))
        drawn += batch
        if as_large > allowed:
            break
    return (1 + as_large) / (1 + drawn)
