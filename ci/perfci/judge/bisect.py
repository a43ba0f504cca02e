"""Which release made it slower: bisection over releases in order, each step an A/B of
a candidate against the current good end.

The ends are compared first: if the newest is not a judged regression against the
oldest there is nothing to find. Then the midpoint of the good and bad ends is A/B'd
against the good end: a regression moves the bad end to it, unchanged (or better)
moves the good end. An inconclusive step is measured again (`retries`); still
inconclusive, the change up to the midpoint is below what one A/B sees, and the bad
end is A/B'd against the midpoint: a regression there moves the good end to the
midpoint (the search goes on after it, and the summary says what stayed below the
MDE before it); inconclusive too, the slowdown is spread (the ends apart, neither
half beyond the MDE); unchanged, the search stops and says between which two
releases it could not decide. When the ends are adjacent, the bad end is A/B'd against its direct
predecessor (its earlier verdict may have been against an older good end): a
regression there names the first slower release; none means the slowdown is spread
over several releases, each step below what one A/B can see.

The ends' verdict may be known already (`ends`: the nightly's reference A/B that
confirmed the regression); it is not measured again. A search out of time (the
caller's `Compare` raises `OutOfTime` before a step it has no time for) stops with
the stretch still to search (`remaining`): the next search starts there, its ends
known apart.

The A/B itself is the caller's (`Compare`): this module only decides what to measure
next and what the measurements say.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from perfci.judge.paired import PairedVerdict
from perfci.model.verdicts import Outcome

Verdict = Literal["regression", "unchanged", "improvement", "inconclusive"]


@dataclass(frozen=True)
class Step:
    """One A/B: `candidate` against `reference` (B/A of the judged metric, its interval)."""
    reference: str
    candidate: str
    verdict: Verdict
    ratio: float
    low: float
    high: float
    mde: float | None = None  # what the A/B could see, when it said

    def line(self) -> str:
        return (f"{self.candidate} vs {self.reference}: {self.verdict} "
                f"(B/A {self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}])")


DECIDED = (Outcome.REGRESSION, Outcome.UNCHANGED, Outcome.IMPROVEMENT)


def step_of(reference: str, candidate: str, rows: list[PairedVerdict], metric: str) -> Step:
    """An A/B's verdict on `metric` over its phases (the rows of the phases it judged):
    a regression in any is the step's (the worst one shown); else unchanged only when
    every one is, else inconclusive."""
    rows = [r for r in rows if r.spec is not None and r.estimate is not None and r.key.split(".", 1)[1] == metric]
    if not rows:
        return Step(reference, candidate, "inconclusive", 1.0, 0.0, float("inf"))
    worse = [r for r in rows if r.verdict == Outcome.REGRESSION]
    pick = min(worse or rows, key=lambda r: r.estimate.ratio if r.estimate else 1.0)
    assert pick.estimate is not None
    verdict: Verdict
    if worse:
        verdict = "regression"
    elif all(r.verdict == Outcome.IMPROVEMENT for r in rows):
        verdict = "improvement"
    elif all(r.verdict in DECIDED for r in rows):
        verdict = "unchanged"
    else:
        verdict = "inconclusive"
    return Step(reference, candidate, verdict, pick.estimate.ratio, pick.estimate.low, pick.estimate.high, pick.mde)


Compare = Callable[[str, str], Step]  # (reference, candidate) -> the A/B's step


class OutOfTime(Exception):
    """Raised by a Compare that has no time left for the next step."""


@dataclass
class Bisection:
    steps: list[Step] = field(default_factory=list)
    first_bad: str | None = None    # the first slower release, when one step holds the change
    last_good: str | None = None    # its predecessor
    spread_between: tuple[str, str] | None = None   # slower over several releases, none alone beyond the MDE
    undecided_between: tuple[str, str] | None = None  # an inconclusive step stopped the search
    no_regression: bool = False     # the ends themselves are not apart
    ends_apart: bool = False        # the ends are a judged regression (whatever the search found after)
    below_mde: list[Step] = field(default_factory=list)  # inconclusive steps the search went past
    remaining: tuple[str, str] | None = None  # out of time: the stretch still to search (its ends apart)

    def passed_over(self) -> str:
        return "".join(f"; {s.reference} -> {s.candidate} stayed inconclusive (B/A {s.ratio:.3f} "
                       f"[{s.low:.3f}, {s.high:.3f}]): a smaller change there is possible" for s in self.below_mde)

    def summary(self) -> str:
        if self.no_regression:
            first = self.steps[0]
            return f"no regression between the ends: {first.line()}"
        if self.first_bad and self.last_good:
            final = next(s for s in reversed(self.steps) if s.candidate == self.first_bad
                         and s.reference == self.last_good)
            could = f"; the A/B could see {final.mde:.1%}" if final.mde is not None else ""
            return (f"first slower in {self.first_bad} (B/A {final.ratio:.3f} [{final.low:.3f}, {final.high:.3f}]{could}); "
                    f"{self.last_good} was not{self.passed_over()}")
        if self.spread_between:
            a, b = self.spread_between
            return (f"spread over several releases: slower from {a} to {b}, but no single release step is "
                    f"beyond what one A/B can see{self.passed_over()}")
        if self.remaining:
            a, b = self.remaining
            return f"out of time: the change lies after {a}, up to {b}; still to search{self.passed_over()}"
        assert self.undecided_between
        a, b = self.undecided_between
        return f"undecided between {a} and {b}: an A/B stayed inconclusive{self.passed_over()}"


def bisect_steps(releases: int, retries: int = 1) -> tuple[int, int]:
    """How many A/Bs a bisect over `releases` takes (what it can cost, said before it
    runs): at least the ends and each midpoint (one per halving); at most, also a second
    A/B at each midpoint (the rest after an undecided one) and the last pair's check,
    every one undecided and tried `retries` more times."""
    halvings = math.ceil(math.log2(releases - 1)) if releases > 2 else 0
    least = 1 + halvings
    return least, (1 + 2 * halvings + (1 if halvings else 0)) * (retries + 1)


def bisect(releases: Sequence[str], compare: Compare, retries: int = 1, ends: Step | None = None) -> Bisection:
    """`releases` oldest first: the first is the known good, the last the known bad;
    `ends`: their A/B when it ran already."""
    if len(releases) < 2:
        raise ValueError("bisect needs at least two releases")
    if ends is not None and (ends.reference, ends.candidate) != (releases[0], releases[-1]):
        raise ValueError(f"the known ends' A/B is {ends.candidate} vs {ends.reference}, not of this line's ends")
    found = Bisection()
    bounds = [0, len(releases) - 1]  # good, bad: where an out-of-time search stopped
    try:
        return _search(releases, compare, retries, ends, found, bounds)
    except OutOfTime:
        found.remaining = (releases[bounds[0]], releases[bounds[1]]) if found.ends_apart else None
        found.undecided_between = None if found.ends_apart else (releases[0], releases[-1])
        return found


def _search(releases: Sequence[str], compare: Compare, retries: int, ends: Step | None, found: Bisection,
            bounds: list[int]) -> Bisection:

    def judged(reference: str, candidate: str) -> Step:
        for _ in range(retries + 1):
            step = compare(reference, candidate)
            found.steps.append(step)
            if step.verdict != "inconclusive":
                break
        return step

    good, bad = 0, len(releases) - 1
    if ends is None:
        ends = judged(releases[good], releases[bad])
    else:
        found.steps.append(ends)
    if ends.verdict == "inconclusive":
        found.undecided_between = (releases[good], releases[bad])
        return found
    if ends.verdict != "regression":
        found.no_regression = True
        return found
    found.ends_apart = True
    last = ends
    while bad - good > 1:
        bounds[:] = [good, bad]
        mid = (good + bad) // 2
        last = judged(releases[good], releases[mid])
        if last.verdict == "regression":
            bad = mid
        elif last.verdict in ("unchanged", "improvement"):
            good = mid
        else:  # below what an A/B sees up to mid: is the rest after it?
            below = last
            last = judged(releases[mid], releases[bad])
            if last.verdict == "regression":
                found.below_mde.append(below)
                good = mid
            elif last.verdict == "inconclusive":
                found.spread_between = (releases[good], releases[bad])
                return found
            else:
                found.undecided_between = (releases[good], releases[mid])
                return found
    bounds[:] = [good, bad]
    if not (last.reference == releases[good] and last.candidate == releases[bad] and last.verdict == "regression"):
        last = judged(releases[good], releases[bad])
    if last.verdict == "regression":
        found.first_bad, found.last_good = releases[bad], releases[good]
    elif last.verdict == "inconclusive":
        found.undecided_between = (releases[good], releases[bad])
    else:
        found.spread_between = (releases[0], releases[-1])
    return found
