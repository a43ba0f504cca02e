"""An A/B's verdict for machines (`perfci ab --json`, schema perfci.ab-verdict/2): what
was compared, the outcome as a typed Outcome, every judged metric with B/A, the
decision's interval, the adjusted p and what the run could see (MDE), and the explain
pass's Why. The PR comment reads this, never the report's prose."""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
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


class Pilot(StrictModel):
    """What a sized A/B's internal pilot measured after its first instance pairs, and the
    number of instance pairs it planned then (judge/design.pilot)."""
    after: int = Field(description="instance pairs it looked at")
    block_sd: float = Field(description="the worst sized metric's within-instance two-pair block sd, measured")
    planned_block_sd: float = Field(description="what the plan assumed for that metric")
    instance_s: float = Field(description="seconds an instance pair took")
    planned: int = Field(description="instance pairs planned before it")
    instances: int = Field(description="instance pairs it planned")
    mde: float = Field(description="what those see at 90 % power")
    capped_by: Literal["budget", "instances"] = Field(
        "budget", description="what held it short of the target: the time budget at the pace measured, or the most "
                              "instance pairs an A/B plans (judge/design.py MAX_INSTANCES)")

    def said(self, target: float) -> str:
        held = "the budget allows no more" if self.capped_by == "budget" else \
            f"{self.instances} instance pairs are the most an A/B plans"
        reach = "" if self.mde <= target else f", not the target {target:.0%}: {held}"
        change = f"{self.planned} -> {self.instances}" if self.instances != self.planned else f"kept {self.planned}"
        return (f"internal pilot after {self.after} instance pairs: their bursts' block spread {self.block_sd:.1%} "
                f"(the plan assumed {self.planned_block_sd:.1%}), {self.instance_s / 60:.1f} min an instance pair; "
                f"instance pairs {change}, seeing {self.mde:.1%} at 90 % power{reach}")


class Sizing(StrictModel):
    """How an interleaved A/B was sized before it ran (judge/design.py), and what its
    internal pilot changed: the planned MDE, apart from the achieved one of its metrics."""
    instances: int = Field(description="instance pairs planned")
    bursts: int = Field(description="measured burst pairs per phase and instance pair (warm-up not counted)")
    mde: float = Field(description="what the worst sized metric sees at 90 % power, as planned")
    minutes: float
    target: float
    budget_minutes: float
    source: str = Field(description="where the noise figures came from")
    fixed: str | None = Field(None, description="the option that fixed the size instead of the target")
    pilot: Pilot | None = None

    @property
    def reaches_target(self) -> bool:
        return self.mde <= self.target

    def said(self) -> str:
        """The sizing line of every report, issue and log (its one writer)."""
        if self.reaches_target:
            reach = f"sees {self.mde:.1%} at 90 % power (target {self.target:.0%})"
        elif self.fixed:
            reach = f"sees {self.mde:.1%} at 90 % power (size set by {self.fixed}; the target {self.target:.0%} needs more)"
        else:
            reach = (f"sees {self.mde:.1%} at 90 % power: the target {self.target:.0%} needs more than the "
                     f"{self.budget_minutes:g}-minute budget")
        pairs = "instance pair" if self.instances == 1 else "instance pairs"
        line = (f"{self.instances} {pairs} x {self.bursts} burst pairs per phase, ~{self.minutes:.0f} min; "
                f"{reach}; noise from {self.source}")
        return line + (f"; {self.pilot.said(self.target)}" if self.pilot else "")


class AbVerdict(StrictModel):
    schema_: Literal["perfci.ab-verdict/2"] = Field("perfci.ab-verdict/2", alias="schema")
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
    sizing: str = Field("", description="how it was sized, for people (`size`'s line, or rounds mode's)")
    size: Sizing | None = Field(None, description="an interleaved A/B's size, typed (None: rounds mode)")
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


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 kept the size as its line only."""
    parts = data.get("parts")
    return {**data, "schema": "perfci.ab-verdict/2",
            "parts": [_v1_to_v2(p) if isinstance(p, dict) else p for p in parts] if isinstance(parts, list) else []}


AB_VERDICT_FILE = FileFormat("A/B verdict", AbVerdict, "perfci.ab-verdict/2",
                             upgrades={"perfci.ab-verdict/1": _v1_to_v2})


def overall(judged: list[AbMetric]) -> Outcome:
    """The A/B's outcome from its judged metrics."""
    if any(m.verdict == Outcome.REGRESSION for m in judged):
        return Outcome.REGRESSION
    if any(m.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE) for m in judged):
        return Outcome.INCONCLUSIVE
    return Outcome.UNCHANGED
