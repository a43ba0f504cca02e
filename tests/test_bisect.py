"""Bisection over releases (judge/bisect.py): what it measures next and what it
concludes, against A/Bs stood in by a model of each release's true speed: an A/B sees a
change beyond its MDE (a regression or improvement), calls it unchanged below half of
it, and inconclusive in between; a flaky step answers inconclusive first."""

from __future__ import annotations

import pytest

from perfci.judge.bisect import Step, bisect

RELEASES = ["8.0.12", "8.0.15", "8.0.20", "8.0.22", "8.0.25", "8.0.28", "8.0.31"]


def ab_model(speed: dict[str, float], mde: float = 0.05, flaky: set[tuple[str, str]] | None = None):
    """A Compare over true speeds (higher is faster); records every pair it was asked."""
    asked: list[tuple[str, str]] = []
    flaky = set(flaky or ())

    def compare(reference: str, candidate: str) -> Step:
        asked.append((reference, candidate))
        ratio = speed[candidate] / speed[reference]
        if (reference, candidate) in flaky:
            flaky.discard((reference, candidate))
            verdict = "inconclusive"
        elif ratio < 1 - mde:
            verdict = "regression"
        elif ratio > 1 + mde:
            verdict = "improvement"
        elif abs(ratio - 1) < mde / 2:
            verdict = "unchanged"
        else:
            verdict = "inconclusive"
        return Step(reference, candidate, verdict, ratio, ratio * 0.98, ratio * 1.02)

    return compare, asked


def test_one_release_that_did_it_is_found_in_log2_steps_and_checked_against_its_predecessor():
    speed = {r: (1.0 if i < 4 else 0.9) for i, r in enumerate(RELEASES)}  # 8.0.25 is 10 % slower
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare)
    assert (found.first_bad, found.last_good) == ("8.0.25", "8.0.22")
    assert found.summary() == "first slower in 8.0.25 (B/A 0.900 [0.882, 0.918]); 8.0.22 was not"
    assert asked[0] == ("8.0.12", "8.0.31")  # the ends first
    assert len(asked) <= 1 + 3 + 1  # ends, log2(7) midpoints, the final adjacent check at most
    assert asked[-1] == ("8.0.22", "8.0.25") or ("8.0.22", "8.0.25") in asked


def test_a_slowdown_spread_over_releases_is_said_to_be_spread():
    # 2 % per release: the ends are 11 % apart, no single release step is beyond the 5 % MDE
    speed = {r: 0.98 ** i for i, r in enumerate(RELEASES)}
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare)
    assert found.first_bad is None and found.spread_between == ("8.0.12", "8.0.31")
    assert found.summary().startswith("spread over several releases: slower from 8.0.12 to 8.0.31")
    last = asked[-1]
    assert RELEASES.index(last[1]) - RELEASES.index(last[0]) == 1  # it ended on adjacent releases


def test_a_flaky_middle_step_is_measured_again_and_the_search_goes_on():
    speed = {r: (1.0 if i < 2 else 0.85) for i, r in enumerate(RELEASES)}  # 8.0.20 did it
    compare, asked = ab_model(speed, flaky={("8.0.12", "8.0.22")})
    found = bisect(RELEASES, compare)
    assert (found.first_bad, found.last_good) == ("8.0.20", "8.0.15")
    assert asked.count(("8.0.12", "8.0.22")) == 2  # inconclusive, then again
    assert [s.verdict for s in found.steps[:3]] == ["regression", "inconclusive", "regression"]


def test_a_step_that_stays_inconclusive_stops_the_search_saying_where():
    speed = {r: (1.0 if i < 3 else 0.96) for i, r in enumerate(RELEASES)}  # 4 %: between MDE/2 and MDE
    speed["8.0.31"] = 0.8
    compare, _ = ab_model(speed)
    found = bisect(RELEASES, compare, retries=1)
    assert found.first_bad is None and found.undecided_between == ("8.0.12", "8.0.31")
    assert found.summary() == "undecided between 8.0.12 and 8.0.31: an A/B stayed inconclusive"


def test_ends_that_are_not_apart_end_it_at_once():
    compare, asked = ab_model(dict.fromkeys(RELEASES, 1.0))
    found = bisect(RELEASES, compare)
    assert found.no_regression and asked == [("8.0.12", "8.0.31")]
    assert found.summary().startswith("no regression between the ends: 8.0.31 vs 8.0.12: unchanged")
    with pytest.raises(ValueError):
        bisect(["8.0.31"], compare)
