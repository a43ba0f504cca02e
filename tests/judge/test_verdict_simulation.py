"""Statistical quality, measured: a seeded simulation of A/A comparisons and of
injected regressions at realistic noise, through the real verdict code.

Noise model per run: a between-run effect (70 % of the variance) times an
AR(1)-autocorrelated interval series (phi 0.7, 60 intervals; 30 % of the
run-level variance); the run-level value is the mean of its intervals, as
sysbench reports it. Run-level CV 1-10 %.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from perfci.judge.stats import DEFAULT_CONFIDENCE, judge

pytestmark = pytest.mark.slow  # the simulation fixture: a few seconds

CVS = (0.01, 0.03, 0.05, 0.10)
SIZES = ((1, 2), (1, 3), (1, 10), (3, 3), (3, 10))  # (current runs, baseline samples); 10 = default window
REGRESSIONS = (0.02, 0.05, 0.10, 0.20)
TOLERANCE = 0.05
AA_TRIALS = 5000
POWER_TRIALS = 500


def run_values(rng, count: int, cv: float, intervals: int = 60, phi: float = 0.7) -> np.ndarray:
    between = rng.normal(0.0, cv * np.sqrt(0.7), count)
    # innovations scaled so that the mean of the AR(1) series has sd cv*sqrt(0.3)
    mean_var_factor = (1 + phi) / (1 - phi) / intervals
    innovation_sd = cv * np.sqrt(0.3) / np.sqrt(mean_var_factor) * np.sqrt(1 - phi ** 2)
    shocks = rng.normal(0.0, innovation_sd, (count, intervals))
    series = lfilter([1.0], [1.0, -phi], shocks, axis=1)
    return 1000.0 * np.exp(between) * (1 + series.mean(axis=1))


def regression_rate(rng, k: int, n: int, cv: float, drop: float, trials: int) -> float:
    # all trials' runs drawn at once (numpy); each trial judged by the real verdict code
    current = run_values(rng, trials * k, cv).reshape(trials, k) * (1 - drop)
    baseline = run_values(rng, trials * n, cv).reshape(trials, n)
    flagged = sum(judge(c.tolist(), b.tolist(), "higher", TOLERANCE).verdict == "regression"
                  for c, b in zip(current, baseline))
    return flagged / trials


@pytest.fixture(scope="module")
def simulation():
    rng = np.random.default_rng(20261122)
    table = {}
    for k, n in SIZES:
        for cv in CVS:
            fa = regression_rate(rng, k, n, cv, 0.0, AA_TRIALS)
            power = {d: regression_rate(rng, k, n, cv, d, POWER_TRIALS) for d in REGRESSIONS}
            table[(k, n, cv)] = (fa, power)
    return table


def test_print_false_alarms_and_power(simulation, capsys):
    with capsys.disabled():
        print(f"\nverdict simulation: tolerance {TOLERANCE:.0%}, confidence {DEFAULT_CONFIDENCE:.1%}, "
              f"A/A trials {AA_TRIALS}, regression trials {POWER_TRIALS}")
        print("current  baseline  CV     false-alarms  " + "  ".join(f"power@{d:.0%}" for d in REGRESSIONS))
        for (k, n, cv), (fa, power) in simulation.items():
            print(f"{k:>7}  {n:>8}  {cv:>4.0%}  {fa:>12.2%}  " + "  ".join(f"{power[d]:>9.1%}" for d in REGRESSIONS))


def test_false_alarms_at_most_one_percent_everywhere(simulation):
    for (k, n, cv), (fa, _) in simulation.items():
        assert fa <= 0.01, f"{fa:.2%} false alarms with {k} current runs vs {n} baseline samples at CV {cv:.0%}"


def test_power_for_a_ten_percent_regression_with_three_runs_at_cv_3(simulation):
    # against the default baseline window (10 samples)
    assert simulation[(3, 10, 0.03)][1][0.10] >= 0.90


def test_power_grows_with_effect_and_falls_with_noise(simulation):
    power = simulation[(3, 10, 0.03)][1]
    assert power[0.02] <= power[0.05] <= power[0.10] <= power[0.20]
    assert simulation[(3, 10, 0.10)][1][0.10] < simulation[(3, 10, 0.01)][1][0.10]
    assert power[0.02] <= 0.05  # below tolerance: never flagged (beyond noise alarms)
