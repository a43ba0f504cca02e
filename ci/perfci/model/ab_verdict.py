"""An A/B's verdict for machines (`perfci ab --json`, schema perfci.ab-verdict/1): what
was compared, the outcome as a typed Outcome, every judged metric with B/A, the
decision's interval, the adjusted p and what the run could see (MDE), and the explain
pass's Why. The PR comment reads this, never the report's prose."""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat
from perfci.model.verdicts import Outcome


class AbMetric(StrictModel):
    key: str                                  # phase.metric
    judged: bool                              # a judged metric (else a counter shown as explanation)
    verdict: Outcome
    a: float
    b: float
    ratio: float | None = None                # B/A
    low: float | None = None                  # the decision's interval for B/A
    high: float | None = None
    confidence: float | None = None
    p_adjusted: float | None = None
    mde: float | None = Field(None, description="smallest relative change this run finds with 90 % power")
    reason: str = ""


class SideArgs(StrictModel):
    """A side as perfci runs it: the server spec and its --config overrides (what a
    reproduce line is made of, never parsed back from one)."""
    server: str
    config: list[str] = Field([], description="NAME or NAME=VALUE, in order")

    def describe(self) -> str:
        return " ".join([self.server, *self.config])

    @classmethod
    def legacy(cls, text: str) -> SideArgs | None:
        """A side recorded as text by an older perfci ("SPEC [--config K=V]..." or
        "SPEC [K=V]..."): its records have no typed side (the upgrade path)."""
        try:
            words = shlex.split(text)
        except ValueError:
            return None
        if not words:
            return None
        return cls(server=words[0], config=[w for w in words[1:] if w != "--config"])


class AbSide(StrictModel):
    spec: str
    version: str                              # as the server reported it
    run: SideArgs | None = Field(None, description="spec and overrides, typed (None in verdicts before 2026-11-29)")

    def args(self) -> SideArgs:
        return self.run or SideArgs.legacy(self.spec) or SideArgs(server=self.spec)


FamilyKind = Literal["more-code", "less-code", "same-work-slower", "same-work-faster", "no-change", "undecided"]


class ChangeFamily(StrictModel):
    """Where a change shows: in the code's counted work, or only in time (`perfci ab
    --measure both`; judge/families.py decides it)."""
    kind: FamilyKind = Field(description="more-code / less-code: instructions per transaction moved; "
                                         "same-work-slower / same-work-faster: time moved, the counted work did not; "
                                         "no-change: the work did not, time did not; undecided: the count could not decide")
    phases: list[str] = Field([], description="the phases it was seen in")
    line: str = Field(description="the same, for people")


def ab_command(scenario: str, profile: str, a: SideArgs, b: SideArgs, case: str = "default") -> str:
    """The `perfci ab` that reruns an A/B: what a report, an issue and a PR comment give
    to reproduce it. A side built from a commit (`build:`) is built from the clone
    PERFCI_BUILD_REPO names (yours)."""
    args = ["perfci", "ab", scenario, "--profile", profile, "--a", a.server, "--b", b.server]
    args += [x for c in a.config for x in ("--a-config", c)] + [x for c in b.config for x in ("--b-config", c)]
    line = shlex.join(args + (["--case", case] if case != "default" else []))
    built = any(side.server.startswith("build:") for side in (a, b))
    return f"PERFCI_BUILD_REPO=YOUR_CLONE {line}" if built else line


class AbVerdict(StrictModel):
    schema_: Literal["perfci.ab-verdict/1"] = Field("perfci.ab-verdict/1", alias="schema")
    outcome: Outcome = Field(description="regression (a judged metric of B worse), inconclusive (no regression "
                                         "found, some judged metric could not be decided), unchanged")
    verdict_line: str = Field(description="the report's first line, for people")
    mode: Literal["interleaved", "rounds"]
    scenario: str
    profile: str
    case: str
    scenario_hash: str
    runner_class: str
    host: str
    a: AbSide
    b: AbSide
    sizing: str = ""
    regressions: list[str] = []
    blind_below: float | None = Field(None, description="the largest change, relative, this A/B could have missed "
                                                        "(its worst judged MDE; None after a regression)")
    metrics: list[AbMetric]
    why: str | None = Field(None, description="the explain pass's Why section (Markdown), if one ran")
    why_line: str | None = Field(None, description="the Why in one line (Markdown): the function that moved most, or "
                                                   "where the change shows")
    alpha: float | None = Field(None, description="the A/B's false-alarm level: the chance of any false regression")
    explain_dir: str | None = None
    report_file: str | None = None
    bursts_file: str | None = None
    family: ChangeFamily | None = Field(None, description="--measure both: where the change shows (work or time)")
    parts: list[AbVerdict] = Field([], description="--measure both: the counting A/B's verdict, then the timed one's")

    @property
    def reproduce(self) -> str:
        return ab_command(self.scenario, self.profile, self.a.args(), self.b.args(), self.case)

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


AB_VERDICT_FILE = FileFormat("A/B verdict", AbVerdict, "perfci.ab-verdict/1")


def overall(judged: list[AbMetric]) -> Outcome:
    """The A/B's outcome from its judged metrics."""
    if any(m.verdict == Outcome.REGRESSION for m in judged):
        return Outcome.REGRESSION
    if any(m.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE) for m in judged):
        return Outcome.INCONCLUSIVE
    return Outcome.UNCHANGED
