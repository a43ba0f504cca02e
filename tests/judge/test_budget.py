"""The false-issue budget (judge/budget.py) and what it sets: each road's level per case
and night adds up to the budget over a month; the reference A/B runs, is sized and is
judged at its share; a threshold regression no A/B confirmed opens an issue only when it
is significant at the thresholds' share; every issue says its level."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perfci.alert.regression_issues import below_budget
from perfci.judge import design
from perfci.judge.budget import ROADS, IssueBudget
from perfci.judge.changes import step_p
from perfci.judge.compare import MetricRow
from perfci.judge.stats import estimate_p, judge, ratio_interval
from perfci.model.metrics import default_spec
from perfci.model.verdicts import Direction, Outcome
from perfci.util.errors import BadInput


def test_the_roads_levels_add_up_to_the_budget_over_a_month_of_nights_and_cases():
    for budget in (IssueBudget(), IssueBudget(2, 25), IssueBudget(0.5, 3)):
        month = sum(budget.level(road) for road in ROADS) * budget.cases * budget.nights
        assert month == pytest.approx(budget.false_issues)
    default = IssueBudget()
    assert default.level("ab") == pytest.approx(1 / 600)  # half of 1 over 10 cases x 30 nights
    assert default.level("change") == pytest.approx(0.001)
    assert default.level("threshold") == pytest.approx(1 / 1500)
    said = default.said("change", 10)
    assert "0.100% per case and night" in said and "0.0100% each of 10 metrics" in said
    assert "1 a month over 10 cases and 30 nights" in said


@pytest.mark.parametrize("false_issues, cases", [(0, 10), (-1, 10), (31, 10), (1, 0)])
def test_a_budget_out_of_range_is_bad_input_naming_what_is_allowed(false_issues, cases):
    with pytest.raises(BadInput, match="false-issue budget"):
        IssueBudget(false_issues, cases)


def test_a_smaller_level_makes_the_same_ab_see_less_and_the_sized_ab_bigger():
    noise = design.RUNNER_DEFAULT_NOISE
    assert design.mde(noise, 6, 20, 18, alpha=IssueBudget().level("ab")) > design.mde(noise, 6, 20, 18)
    person = design.size([noise], design.RUNNER_DEFAULT_CYCLE_S, judged=18, warmup=2, budget_minutes=1e6)
    nightly = design.size([noise], design.RUNNER_DEFAULT_CYCLE_S, judged=18, warmup=2, budget_minutes=1e6,
                          alpha=IssueBudget().level("ab"))
    assert person.reaches_target and nightly.reaches_target
    assert nightly.minutes > person.minutes


def test_estimate_p_is_the_two_sample_t_test_of_the_logs():
    """Independent computation: scipy's pooled two-sample t test on the log values (no
    prior, no floor: the interval is then exactly that test's)."""
    rng = np.random.default_rng(3)
    for shift in (0.0, -0.03, -0.1):
        current = list(100 * np.exp(rng.normal(shift, 0.02, 4)))
        baseline = list(100 * np.exp(rng.normal(0, 0.02, 10)))
        est = ratio_interval(current, baseline, 0.995, cv_floor=0.0, prior_cv=0.0, prior_df=0)
        expected = stats.ttest_ind(np.log(current), np.log(baseline), equal_var=True).pvalue
        assert estimate_p(est) == pytest.approx(expected, rel=1e-6)
    est = ratio_interval([100.0], [100.0], 0.995)
    assert estimate_p(est) is None  # no spread: no p


def _row(current: list[float], baseline: list[float]) -> MetricRow:
    spec = default_spec("tps")
    return MetricRow("after.tps", spec, baseline, current,
                     judge(current, baseline, Direction.HIGHER, spec.tolerance))


def test_an_unconfirmed_threshold_regression_needs_the_thresholds_share_of_the_budget():
    rng = np.random.default_rng(9)
    baseline = list(1000 * np.exp(rng.normal(0, 0.02, 10)))
    clear = _row([700.0], baseline)       # -30 % against ten nights of 2 %: far beyond any level
    marginal = _row([880.0], baseline)    # -12 %: p 7e-4, significant at 99.5 %, not at 0.00067 % per metric
    assert clear.verdict.verdict == marginal.verdict.verdict == Outcome.REGRESSION
    budget = IssueBudget()
    assert below_budget([clear], 10, budget) is None
    why = below_budget([marginal], 10, budget)
    assert why is not None and why.startswith("pending: after.tps regressed (smallest p ")
    assert "thresholds hold 20% of a false-issue budget of 1 a month" in why
    # a looser budget over fewer cases lets the same evidence open it
    assert below_budget([marginal], 1, IssueBudget(3, 1)) is None


def test_a_work_counter_alone_waits_for_its_change_point_or_an_a_b():
    """A counter's nights are not normal enough for a t test at the thresholds' share: a
    regression of counters only is pending whatever its p; beside a throughput key that
    clears the level, the issue opens (the counters ride along in it)."""
    rng = np.random.default_rng(9)
    baseline = list(10 * np.exp(rng.normal(0, 0.02, 10)))
    spec = default_spec("uncompress_ops_per_txn")
    counter = MetricRow("before.uncompress_ops_per_txn", spec, baseline, [20.0],
                        judge([20.0], baseline, spec.direction, spec.tolerance))
    assert counter.verdict.verdict == Outcome.REGRESSION
    why = below_budget([counter], 10, IssueBudget())
    assert why is not None and why.startswith("pending: before.uncompress_ops_per_txn regressed: work counters alone")
    tps = _row([700.0], list(1000 * np.exp(rng.normal(0, 0.02, 10))))
    assert below_budget([tps, counter], 10, IssueBudget()) is None


def test_a_change_point_level_below_the_default_resolution_is_reachable_and_noise_stops_early():
    """0.01 % per metric (ten metrics of the default budget) needs more than 10^4
    orderings; a clear step gets them, a series with no step stops in the first batch and
    its verdict is the same as with every ordering drawn."""
    rng = np.random.default_rng(4)
    spec = default_spec("tps")
    before, after = list(100 * np.exp(rng.normal(0, 0.02, 25))), list(90 * np.exp(rng.normal(0, 0.02, 6)))
    assert step_p(spec, before + after, 1e-4) <= 1e-4
    noise = list(100 * np.exp(rng.normal(0, 0.05, 40)))
    p = step_p(spec, noise, 1e-4)
    assert p > 1e-4 and p == step_p(spec, noise, 0.01)  # one batch either way: the same p


def test_the_budget_is_shared_over_no_fewer_cases_than_a_runner_ran_tonight(tmp_path):
    """#55: `--cases` left at ten while a runner ran twelve cases tonight would give each
    case more than its share: the nightly shares the budget over the twelve, says so once,
    and judges the change points at that level. Counted per runner (host)."""
    from perfci.alert.nightly import NightOptions, run_night
    from perfci.judge.budget import at_least_tonights, cases_tonight

    from factories import make_result
    assert cases_tonight({"r1": {"a", "b"}, "r2": {"c", "d", "e"}}) == 3 and cases_tonight({}) == 0
    same, said = at_least_tonights(IssueBudget(), 10)
    assert same == IssueBudget() and said is None
    wider, said = at_least_tonights(IssueBudget(cases=10), 12)
    assert wider.cases == 12 and wider.level("ab") == pytest.approx(IssueBudget().level("ab") * 10 / 12)
    assert said == ("false-issue budget: shared over the 12 cases one runner ran tonight, not --cases 10 (set "
                    "PERFCI_CASES to the matrix's count: `perfci plan nightly`)")
    night = run_night([make_result(case=f"c{i}") for i in range(12)], NightOptions(history_root=tmp_path / "h"),
                      dry_run_dir=tmp_path / "issues")
    assert said in night.actions
    night = run_night([make_result(case=f"c{i}") for i in range(12)],
                      NightOptions(history_root=tmp_path / "h2", budget=IssueBudget(cases=20)),
                      dry_run_dir=tmp_path / "issues")
    assert not any(a.startswith("false-issue budget") for a in night.actions)
