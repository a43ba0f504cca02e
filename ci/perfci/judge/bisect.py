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

The A/B itself is the caller's (`Compare`): this module only decides what to measure
next and what the measurements say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

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

    def line(self) -> str:
        return (f"{self.candidate} vs {self.reference}: {self.verdict} "
                f"(B/A {self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}])")


Compare = Callable[[str, str], Step]  # (reference, candidate) -> the A/B's step


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
            return (f"first slower in {self.first_bad} (B/A {final.ratio:.3f} [{final.low:.3f}, {final.high:.3f}]); "
                    f"{self.last_good} was not{self.passed_over()}")
        if self.spread_between:
            a, b = self.spread_between
            return (f"spread over several releases: slower from {a} to {b}, but no single release step is "
                    f"beyond what one A/B can see{self.passed_over()}")
        assert self.undecided_between
        a, b = self.undecided_between
        return f"undecided between {a} and {b}: an A/B stayed inconclusive{self.passed_over()}"


def bisect(releases: Sequence[str], compare: Compare, retries: int = 1) -> Bisection:
    """`releases` oldest first: the first is the known good, the last the known bad."""
    if len(releases) < 2:
        raise ValueError("bisect needs at least two releases")
    found = Bisection()

    def judged(reference: str, candidate: str) -> Step:
        for _ in range(retries + 1):
            step = compare(reference, candidate)
            found.steps.append(step)
            if step.verdict != "inconclusive":
                break
        return step

    good, bad = 0, len(releases) - 1
    ends = judged(releases[good], releases[bad])
    if ends.verdict == "inconclusive":
        found.undecided_between = (releases[good], releases[bad])
        return found
    if ends.verdict != "regression":
        found.no_regression = True
        return found
    found.ends_apart = True
    last = ends
    while bad - good > 1:
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
    if not (last.reference == releases[good] and last.candidate == releases[bad] and last.verdict == "regression"):
        last = judged(releases[good], releases[bad])
    if last.verdict == "regression":
        found.first_bad, found.last_good = releases[bad], releases[good]
    elif last.verdict == "inconclusive":
        found.undecided_between = (releases[good], releases[bad])
    else:
        found.spread_between = (releases[0], releases[-1])
    return found
