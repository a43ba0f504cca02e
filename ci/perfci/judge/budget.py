"""The false-issue budget: how many issues a month a project accepts from one runner when
nothing changed, shared out over what can open one.

A nightly opens an issue on a case by one of three roads, and each night a case takes
each road at most once:
- its **reference A/B** flags a regression of tonight's server (sessions/confirm.py; a
  threshold regression the A/B confirms takes this road too: under no change, a threshold
  flag followed by a confirming A/B is at most as likely as the A/B's false alarm);
- a **change point** over its nightly history is called (judge/changes.py);
- a **threshold** regression against the history baseline stands with no A/B behind it
  (no reference to run, or the A/B could not say; alert/regression_issues.py), by
  default on its third night in a row (DEFAULT_MIN_NIGHTS below).
The expected number of false issues in a month is at most the sum, over the cases, nights
and roads, of each road's level on that night (a union bound: valid however the nights,
metrics and roads are correlated). The budget fixes that sum — by default one false issue
a month for a project of ten cases, thirty nights — and gives each road its share per
case and night; each road's level is then shared over the metrics it judges (Holm or
Bonferroni, as before). A smaller level costs sensitivity: the reference A/B is sized for
its target at its level (judge/design.py), a change point needs more nights, a threshold
flag a larger step. Issues say the level they were judged at (`IssueBudget.said`).

Nothing here is learned or simulated: it is the arithmetic of the union bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from perfci.util.errors import BadInput

Road = Literal["ab", "change", "threshold"]
ROADS: tuple[Road, ...] = ("ab", "change", "threshold")
# the reference A/B runs every night a branch or a bumped server is followed, and it is
# the road that sees a step the same night (what size: its report's planned and achieved
# MDE; ~5 % on a one-phase case; a many-phase case's runs the phases that looked worst,
# as many as see 8 % (design.PHASE_MDE_LIMIT), and says so, #55): it gets half; change points (a step
# hidden in the nights' noise) and unconfirmed threshold regressions share the rest
SHARES: dict[Road, float] = {"ab": 0.5, "change": 0.3, "threshold": 0.2}
ROAD_NAMES: dict[Road, str] = {"ab": "the reference A/B holds", "change": "change points hold",
                               "threshold": "thresholds hold"}
# A threshold regression no A/B confirmed opens an issue on the third night in a row it
# stands (the nightly's --min-nights), tested over all of them at the thresholds' share.
# The t test at ~10^-5 a metric trusts a normal tail the nights do not have: a slow hour
# takes ~10 % off a night's throughput and latency, and two such nights in a row opened
# 14 of 200 simulated case-months at two nights, against the road's 2 % share; each night
# more of the streak multiplies the chance that the tail explains it by the tail's own
# rate (benchmarks/results/month-simulation-20261127-*.md).
DEFAULT_MIN_NIGHTS = 3
DEFAULT_FALSE_ISSUES = 1.0
DEFAULT_CASES = 10
NIGHTS_PER_MONTH = 30


@dataclass(frozen=True)
class IssueBudget:
    false_issues: float = DEFAULT_FALSE_ISSUES  # a month, on one runner, when nothing changed
    cases: int = DEFAULT_CASES                  # the cases the project's nightly runs on that runner
    nights: int = NIGHTS_PER_MONTH

    def __post_init__(self) -> None:
        if not 0 < self.false_issues <= self.cases * self.nights / 10:
            raise BadInput(f"false-issue budget: {self.false_issues:g} a month is not allowed: give a number above "
                           f"0 and at most {self.cases * self.nights / 10:g} (a tenth of the {self.cases} cases x "
                           f"{self.nights} nights)")
        if self.cases < 1:
            raise BadInput(f"false-issue budget: cases {self.cases} is not allowed: give the number of cases the "
                           "nightly runs on one runner (1 or more)")

    def level(self, road: Road) -> float:
        """The chance, under no change, that `road` opens an issue on one case in one night."""
        return self.false_issues * SHARES[road] / (self.cases * self.nights)

    def said(self, road: Road, metrics: int = 1) -> str:
        """What an issue says of the level it was judged at."""
        level = self.level(road)
        each = f" ({level / metrics:.4%} each of {metrics} metrics)" if metrics > 1 else ""
        return (f"judged at {level:.3%} per case and night{each}: {ROAD_NAMES[road]} {SHARES[road]:.0%} of "
                f"a false-issue budget of {self.false_issues:g} a month over {self.cases} cases and "
                f"{self.nights} nights")


def budget_of(false_issues: float | None, cases: int | None) -> IssueBudget:
    """The budget from the options (None: the default)."""
    return IssueBudget(DEFAULT_FALSE_ISSUES if false_issues is None else false_issues,
                       DEFAULT_CASES if cases is None else cases)


def cases_tonight(cases_by_host: dict[str, set[str]]) -> int:
    """The most cases one runner ran tonight (`cases_by_host`: runner host -> its case keys)."""
    return max((len(keys) for keys in cases_by_host.values()), default=0)


def at_least_tonights(budget: IssueBudget, cases: int) -> tuple[IssueBudget, str | None]:
    """The budget shared over no fewer cases than a runner ran tonight (#55: a `--cases`
    left at its default of ten while the runner ran 56 would give each case 5.6 times its
    share), and what was changed (None: nothing)."""
    if cases <= budget.cases:
        return budget, None
    return IssueBudget(budget.false_issues, cases, budget.nights), (
        f"false-issue budget: shared over the {cases} cases one runner ran tonight, not --cases {budget.cases} "
        "(set PERFCI_CASES to the matrix's count: `perfci plan nightly`)")
