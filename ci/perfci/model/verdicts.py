"""The words of a judgement: which way is better for a metric, and what a verdict says.
StrEnums: they read, compare and serialise as the plain strings the files hold."""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    """Which way a metric is better."""

    HIGHER = "higher"
    LOWER = "lower"

    @property
    def arrow(self) -> str:
        return "↑" if self is Direction.HIGHER else "↓"


class Outcome(StrEnum):
    """A metric's verdict. compare and A/B give the first five; a paired A/B also says
    `unstable` (pairs too spread to trust) and, for counters it does not judge, `moved`."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    NO_BASELINE = "no-baseline"
    UNSTABLE = "unstable"
    MOVED = "moved"
