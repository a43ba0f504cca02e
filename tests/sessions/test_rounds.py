"""`perfci ab --mode rounds`: the paired verdict over whole-run rounds (sessions/rounds.py)."""

from __future__ import annotations

from perfci.model.verdicts import Outcome
from perfci.sessions.rounds import MIN_JUDGED_ROUNDS, judge_pairs

from factories import make_result


def test_two_rounds_measure_but_never_judge_and_three_do():
    """A real A/A of identical configs (2026-11-30, the e2e rounds test): A 912.46, B 864.28,
    B 825.64, A 871.48 tps, a host slower in the middle of the four runs, so B/A 0.9472 and
    0.9474: two ratios that alike make a 99.5 % interval at one degree of freedom of nothing,
    and the drift read as B 5 % slower, "regression". Two rounds now say inconclusive, why;
    the same ratios over three rounds are judged."""
    a_tps, b_tps = [912.46, 871.48], [864.28, 825.64]
    two = {r.key: r for r in judge_pairs([[make_result(tps=t) for t in a_tps], [make_result(tps=t) for t in b_tps]])}
    tps = two["before.tps"].verdict
    assert tps.verdict == Outcome.INCONCLUSIVE and tps.reason.startswith("2 rounds: one degree of freedom")
    assert tps.change_pct is not None and -5.4 < tps.change_pct < -5.2  # still said: what it measured
    assert not [r.key for r in two.values() if r.verdict.verdict in (Outcome.REGRESSION, Outcome.IMPROVEMENT)]
    assert MIN_JUDGED_ROUNDS == 3
    three = {r.key: r for r in judge_pairs([[make_result(tps=t) for t in [*a_tps, 900.0]],
                                            [make_result(tps=t) for t in [*b_tps, 900.0 * 0.9473]]])}
    assert three["before.tps"].verdict.verdict == Outcome.REGRESSION
