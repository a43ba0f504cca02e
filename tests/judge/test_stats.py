"""The ratio interval and the verdict rule."""

import math

import numpy as np
import pytest
from scipy import stats

from perfci.judge.stats import judge, paired_interval, ratio_interval


def test_interval_matches_scipy_two_sample_t_on_logs():
    cur, base = [95.0, 97.0, 93.0, 96.0], [100.0, 104.0, 99.0, 101.0, 103.0]
    est = ratio_interval(cur, base, confidence=0.95, cv_floor=0.0, prior_df=0)
    ci = stats.ttest_ind(np.log(cur), np.log(base), equal_var=True).confidence_interval(0.95)
    assert est.low == pytest.approx(math.exp(ci.low)) and est.high == pytest.approx(math.exp(ci.high))
    assert est.df == 7 and est.ratio == pytest.approx(math.exp(np.mean(np.log(cur)) - np.mean(np.log(base))))


def test_cv_floor_widens_a_too_quiet_baseline():
    tight = ratio_interval([97.0], [100.0, 100.0, 100.0], cv_floor=0.0, prior_df=0)
    floored = ratio_interval([97.0], [100.0, 100.0, 100.0], cv_floor=0.02, prior_df=0)
    assert tight.low == tight.high == pytest.approx(0.97)
    assert floored.low < 0.97 < floored.high and floored.cv == pytest.approx(0.02)


def test_prior_moderates_a_two_sample_baseline():
    # df = 1 alone gives t(0.9975) = 127: nothing could ever be called
    bare = ratio_interval([20.0], [1.0, 1.3], prior_df=0)
    moderated = ratio_interval([20.0], [1.0, 1.3])
    assert bare.low < 1 and moderated.low > 1 and moderated.df == 3
    # with many samples the prior hardly matters
    many = [100.0 + i % 5 for i in range(30)]
    a, b = ratio_interval([95.0], many), ratio_interval([95.0], many, prior_df=0)
    assert a.low == pytest.approx(b.low, rel=0.02)


def test_verdicts():
    base = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
    assert judge([800.0, 805.0, 798.0], base, "higher", 0.05).verdict == "regression"
    assert judge([1200.0, 1190.0, 1210.0], base, "higher", 0.05).verdict == "improvement"
    assert judge([990.0], base, "higher", 0.05).verdict == "unchanged"
    # lower is better: latency up 20 % is a regression
    assert judge([1.2, 1.21, 1.19], [1.0, 1.01, 0.99, 1.0], "lower", 0.10).verdict == "regression"
    # beyond tolerance but the noise is as large: inconclusive, not an alarm
    assert judge([900.0], [1000.0, 800.0, 1200.0], "higher", 0.05).verdict == "inconclusive"
    # a trivial change is not flagged however certain
    assert judge([990.0, 991.0, 989.0], [1000.0, 1000.5, 999.5], "higher", 0.05).verdict == "unchanged"
    assert judge([900.0], [], "higher", 0.05).verdict == "no-baseline"
    one_each = judge([500.0], [1000.0], "higher", 0.05)
    assert one_each.verdict == "inconclusive" and "no spread" in one_each.reason
    assert judge([0.0], [0.0, 0.0], "lower", 0.1).verdict == "unchanged"
    assert judge([0.5], [0.0, 0.0], "lower", 0.1).verdict == "inconclusive"


def test_paired_interval_matches_scipy_one_sample_t():
    ratios = [0.70, 0.72, 0.69, 0.71]
    est = paired_interval(ratios, confidence=0.99)
    ci = stats.ttest_1samp(np.log(ratios), 0).confidence_interval(0.99)
    assert est.low == pytest.approx(math.exp(ci.low)) and est.high < 1
    assert paired_interval([0.9]).low is None


def test_a_change_below_the_absolute_floor_is_unchanged():
    """0.006 -> 0.010 fsyncs per transaction (background flushing, not work) is +70 %
    with a tight interval, and still nothing; 0.006 -> 1.0 (fsync at commit) is flagged."""
    baseline = [0.0057, 0.0058, 0.0056, 0.0057]
    noisy = judge([0.0099], baseline, "lower", 0.10, floor=0.05)
    assert noisy.verdict == "unchanged" and "below the metric's absolute floor 0.05" in noisy.reason
    assert noisy.change_pct is not None and noisy.change_pct > 70
    assert judge([0.0099], baseline, "lower", 0.10).verdict != "unchanged"  # without the floor
    assert judge([1.0, 1.01], baseline, "lower", 0.10, floor=0.05).verdict == "regression"
    from perfci.model.metrics import default_spec
    assert default_spec("fsyncs_per_txn").floor == 0.05 and default_spec("tps").floor == 0.0
