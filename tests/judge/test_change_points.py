"""Change points that account for their search (judge/changes.py): a worse level is called
only when the series up to it, its nights in a random order, shows so large a step less
often than CHANGE_ALPHA (the default false-issue budget's share per case and night, 0.1 %)
shared over the case's judged metrics.

What the simulations assume: nights independent and identically distributed around
their level (log-normal, the spread of each metric drawn between 2 % and 12 %); one look
at the end of the series. The permutation test needs exchangeable nights: a series whose
nights drift (AR(1) with 0.6 correlation from one night to the next), built to break
that assumption, is measured too and its rate stated, not held to the budget."""

from __future__ import annotations

import numpy as np
import pytest

from perfci.judge.changes import CHANGE_ALPHA, MIN_SEGMENT, persisting_changes, step_p
from perfci.model.history import HistoryRecord
from perfci.model.metrics import default_spec

METRICS = ("tps", "qps", "latency_ms_avg", "latency_ms_p95", "index_page_splits_per_txn",
           "uncompress_ops_per_txn", "compress_failures_per_txn", "pages_written_per_txn", "fsyncs_per_txn",
           "statement_cpu_us_per_txn")


def records(columns: dict[str, np.ndarray]) -> list[HistoryRecord]:
    n = len(next(iter(columns.values())))
    return [HistoryRecord(result_id=f"r{i:02d}", date=f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}",
                          scenario_hash="sha256:aaaa", metrics={f"after.{k}": float(v[i]) for k, v in columns.items()})
            for i in range(n)]


def case_called(rng, nights: int, drift: float = 0.0) -> bool:
    """One case of pure noise on every judged metric: does any get a change point?"""
    columns = {}
    for metric in METRICS:
        cv = rng.uniform(0.02, 0.12)
        noise = rng.normal(0, cv, nights)
        if drift:  # AR(1): each night leans on the one before
            for i in range(1, nights):
                noise[i] = drift * noise[i - 1] + np.sqrt(1 - drift ** 2) * noise[i]
        columns[metric] = 100 * np.exp(noise)
    history = records(columns)
    return any(persisting_changes(history, f"after.{m}", default_spec(m), len(METRICS)) for m in METRICS)


def test_a_clear_step_is_called_and_its_p_is_below_the_shared_level():
    rng = np.random.default_rng(5)
    before, after = list(100 * np.exp(rng.normal(0, 0.02, 20))), list(90 * np.exp(rng.normal(0, 0.02, 5)))
    assert step_p(default_spec("tps"), before + after, CHANGE_ALPHA / len(METRICS)) <= CHANGE_ALPHA / len(METRICS)
    history = records({"tps": np.array(before + after)})
    [change] = persisting_changes(history, "after.tps", default_spec("tps"), len(METRICS))
    assert change.location.result_id == "r20"


def test_a_step_needs_enough_nights_for_a_random_order_to_be_rare_whatever_its_size():
    """680 orderings of 17 nights with 3 at the end: the permutation p cannot go below
    1/680; with 4 at the end the largest-step maximum still ties in ~4 of 10^4 orderings
    (above the default budget's 0.1 % per case and night shared by ten metrics); the 5th
    night calls it (~7 in 10^5, drawn from 10^5 orderings: the level needs them)."""
    before, after = [100.0 + i * 0.01 for i in range(14)], [50.0, 50.1, 50.2, 50.3, 50.4]
    level = CHANGE_ALPHA / len(METRICS)
    assert step_p(default_spec("tps"), before + after[:3], level) >= 1 / 681
    assert step_p(default_spec("tps"), before + after[:4], level) >= level
    assert step_p(default_spec("tps"), before + after, level) <= level


def test_a_step_toward_better_is_not_a_worse_step():
    before, after = [100.0 + (i % 3) for i in range(20)], [130.0 + (i % 3) for i in range(6)]
    assert step_p(default_spec("tps"), before + after) > 0.5
    assert step_p(default_spec("latency_ms_avg"), before + after) < 0.001
    assert step_p(default_spec("tps"), [5.0] * (2 * MIN_SEGMENT + 2)) == 1.0  # no spread: no step


@pytest.mark.slow
def test_pure_noise_gets_a_change_point_in_at_most_one_percent_of_sixty_night_cases():
    """150 cases x 10 noisy judged metrics x 60 nights, iid (see the module docstring)."""
    rng = np.random.default_rng(20261126)
    called = sum(case_called(rng, 60) for _ in range(150))
    # measured here: 2 of 300 (seeded); at most 1 %: 1.5 expected of 150, 4 or more < 2 % of the time at 1 %
    assert called <= 3, called


@pytest.mark.slow
def test_drifting_nights_break_the_exchangeability_the_test_assumes():
    """AR(1) nights (0.6): what a slowly wandering runner would do. Measured and stated,
    not held to the budget: the permutation test's guarantee is for exchangeable nights,
    which is why the nightly also wants the step beyond the metric's tolerance and still
    there tonight. This must stay a visible, bounded excess, not a silent one."""
    rng = np.random.default_rng(11)
    called = sum(case_called(rng, 60, drift=0.6) for _ in range(60))
    # measured: 24 of 60 (40 %) against ~1 % for iid nights: the assumption broken, said in docs/nightly.md
    assert 10 <= called <= 40, called


def test_the_early_stopping_e_divisive_finds_the_librarys_change_points():
    """judge/changes.e_divisive stops a permutation test once it cannot be significant; on
    series with no change, one step, two steps, a spike, a drift, short and long, at a
    strict and a loose p-value, it returns what signal_processing_algorithms' e_divisive
    returns from the same generator state."""
    from signal_processing_algorithms.energy_statistics import energy_statistics as library

    from perfci.judge.changes import e_divisive

    rng = np.random.default_rng(7)
    shapes = {
        "noise": lambda n: np.zeros(n),
        "step": lambda n: np.where(np.arange(n) >= n // 2, 0.1, 0.0),
        "two steps": lambda n: np.select([np.arange(n) < n // 3, np.arange(n) < 2 * n // 3], [0.0, 0.15], -0.1),
        "spike": lambda n: np.where(np.arange(n) == n // 2, 0.5, 0.0),
        "drift": lambda n: np.linspace(0, 0.2, n),
    }
    found_some = 0
    for name, shape in shapes.items():
        for n in (8, 20, 45):
            for pvalue in (0.01, 0.2):
                series = 1000 * np.exp(shape(n) + rng.normal(0, 0.04, n))
                np.random.seed(11)
                theirs = library.e_divisive(series, pvalue=pvalue, permutations=100)
                np.random.seed(11)
                ours = e_divisive(series, pvalue=pvalue, permutations=100)
                assert ours == theirs, (name, n, pvalue)
                found_some += bool(theirs)
    assert 10 <= found_some < 30  # both outcomes, many times: not a comparison of empty lists
