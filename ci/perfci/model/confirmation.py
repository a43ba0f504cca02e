"""A confirmation: what the nightly's reference A/B of one case found (the value;
sessions/confirm.py runs the A/B, store/confirmation_files.py reads and writes it,
report/reference_ab.py renders its part of an issue)."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import Literal

from pydantic import Field

from perfci.model.ab_verdict import SideArgs, Sizing
from perfci.model.abratio import AbRatio
from perfci.model.base import StrictModel
from perfci.model.culprit import CulpritSearch
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.result import ResultId

SUFFIX = ".confirmation.json"


Trigger = Literal["regression", "server-changed"]


class PhaseChoice(StrictModel):
    """Which phases a many-phase case's reference A/B ran (#55): an A/B of them all could
    not see `limit` within its budget, so it ran the phases that looked worst tonight, as
    many as still see it (at least one, whatever that one sees)."""
    run: list[str] = Field(description="the phases the A/B ran, most suspect first")
    of: int = Field(description="the phases the case measures")
    limit: float = Field(description="the largest MDE the nightly plans for a phase it A/Bs")
    mde_all: float = Field(description="what an A/B of every phase would have seen at 90 % power within the budget")
    mde_run: float = Field(description="what the A/B of these phases planned to see")

    def said(self) -> str:
        """One line for the confirmation's readers: what ran, why, and what it can see."""
        which = ", ".join(self.run)
        head = (f"{len(self.run)} of {self.of} phases ({which}): those that looked worst tonight, "
                f"because all {self.of} would see only {self.mde_all:.1%} within the budget")
        if self.mde_run <= self.limit:
            return f"{head}; these see {self.mde_run:.1%} (the nightly plans for {self.limit:.0%} or better)"
        return (f"{head}; even the worst one alone sees only {self.mde_run:.1%}, not the {self.limit:.0%} the nightly "
                "plans for: this A/B sees large steps only, and the change points carry the rest")


class Confirmation(StrictModel):
    schema_: Literal["perfci.confirmation/9"] = Field("perfci.confirmation/9", alias="schema")
    result_id: ResultId
    case: str
    status: Literal["confirmed", "not-confirmed", "not-run"]
    reason: str
    nightly_regressions: list[str]
    a: str = Field("", description="the last good server: spec and overrides")
    b: str = Field("", description="this run's server: spec and overrides")
    # /7
    a_run: SideArgs | None = Field(None, description="a, typed: what the reference A/B ran as A")
    b_run: SideArgs | None = Field(None, description="b, typed: what it ran as B")
    why: str | None = Field(None, description="the A/B's Why section (Markdown), if it has one")
    why_line: str | None = Field(None, description="the Why in one line: the function that moved most, or where "
                                                   "the change shows")
    profile: str = ""
    ab_regressions: list[str] = []
    bursts_file: str | None = None
    report: str = Field("", description="the A/B's Markdown report")
    # /2
    failed: bool = Field(False, description="not-run because the A/B failed on this runner (infrastructure), "
                                            "not because there was nothing to compare")
    # /3
    trigger: Trigger = "regression"
    reference_version: str = Field("", description="the reference's server version (the baseline's newest sample)")
    ratios: dict[str, AbRatio] = Field({}, description="judged metrics of the A/B: B/A, interval, MDE")
    sizing: str = Field("", description="how the A/B was sized and what it could see")
    # /4
    unchanged_server: bool = Field(False, description="not-run: tonight's server, build and config are the "
                                                      "reference's, so what moved is the runner, perfci or the data")
    # /5
    culprit: CulpritSearch | None = Field(None, description="confirmed on a build: line: the bisect over the commits "
                                                            "between the reference and tonight")
    # /6
    alpha: float | None = Field(None, description="the level the A/B was judged at: family-wise over its metrics and "
                                                   "looks, the false-issue budget's share per case and night")
    # /8
    flamegraphs: list[str] = Field([], description="the A/B's flame graphs (SVG), relative to this file's directory: "
                                                   "PHASE-a, PHASE-b and PHASE-diff (B against A) of its explain pass "
                                                   "or counted Why; the nightly keeps a confirmed one's with the "
                                                   "history, and the dashboard publishes them")
    # /9
    phases: PhaseChoice | None = Field(None, description="a many-phase case: the phases its A/B ran and why "
                                                          "(None: every phase the case measures)")
    size: Sizing | None = Field(None, description="`sizing`, typed: the A/B's planned size and what its internal "
                                                  "pilot changed")

    def dump(self) -> JsonObject:
        return self.model_dump(mode="json", by_alias=True)


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 did not tell a failed A/B from one with nothing to compare: neither failed."""
    return {**data, "schema": "perfci.confirmation/2"}


def _v2_to_v3(data: JsonObject) -> JsonObject:
    """/2 ran only on a threshold regression, and kept no ratios."""
    return {**data, "schema": "perfci.confirmation/3"}


def _v3_to_v4(data: JsonObject) -> JsonObject:
    """/3 did not say that tonight's server was the reference's itself."""
    return {**data, "schema": "perfci.confirmation/4"}


def _v4_to_v5(data: JsonObject) -> JsonObject:
    """/4 never searched the commits of a build: line."""
    return {**data, "schema": "perfci.confirmation/5"}


def _v5_to_v6(data: JsonObject) -> JsonObject:
    """/5 did not record the A/B's level (it was 0.5 %)."""
    return {**data, "schema": "perfci.confirmation/6", "alpha": 0.005 if data.get("status") in ("confirmed",
                                                                                               "not-confirmed") else None}


def _v6_to_v7(data: JsonObject) -> JsonObject:
    """/6 kept the sides as text only: typed from it as that perfci wrote it; its Why
    only inside the report (an upgrade reads it from there, once, as that perfci wrote it)."""
    typed = {f"{side}_run": run.model_dump() if (run := SideArgs.legacy(str(data.get(side) or ""))) else None
             for side in ("a", "b")}
    report = str(data.get("report") or "")
    at = report.find("\n### Why")
    why = report[at + 1:].strip().removeprefix("### Why").lstrip(": ") if at >= 0 else None
    return {**data, **typed, "why": why, "schema": "perfci.confirmation/7"}


def _v7_to_v8(data: JsonObject) -> JsonObject:
    """/7 named no flame graphs (its A/B's were on the runner only)."""
    return {**data, "schema": "perfci.confirmation/8"}


def _v8_to_v9(data: JsonObject) -> JsonObject:
    """/8 always ran every phase of the case, and kept its size as a line only."""
    return {**data, "schema": "perfci.confirmation/9"}


_UPGRADES = (_v1_to_v2, _v2_to_v3, _v3_to_v4, _v4_to_v5, _v5_to_v6, _v6_to_v7, _v7_to_v8, _v8_to_v9)


def _from_version(n: int) -> Callable[[JsonObject], JsonObject]:
    """/n to the current schema: each step after it, in turn."""
    return lambda data: reduce(lambda d, step: step(d), _UPGRADES[n - 1:], data)


CONFIRMATION_FILE = FileFormat("confirmation", Confirmation, "perfci.confirmation/9",
                               upgrades={f"perfci.confirmation/{n}": _from_version(n) for n in range(1, 9)})
