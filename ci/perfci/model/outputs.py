"""What commands print for machines (`--json`): one model per command output, each
with its schema (`perfci schema KIND`, docs/schema/KIND.schema.json). Files perfci
keeps (results, sweeps, confirmations, A/B verdicts) have their own models; a command
whose output is one of those prints that (sweep: the sweep file; ab: the A/B verdict)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.confirmation import Confirmation
from perfci.model.culprit import BisectStep
from perfci.model.formats import FileFormat
from perfci.model.verdicts import Outcome


class Output(StrictModel):
    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


# perfci list
class ProfileEntry(StrictModel):
    name: str
    description: str
    expected_minutes: float
    cases: int
    scenario_hash: str


class ScenarioEntry(StrictModel):
    name: str
    path: str
    description: str
    source: str | None = None
    axes: dict[str, list[str]] = {}
    profiles: list[ProfileEntry]


class InvalidFile(StrictModel):
    path: str
    error: str


class ScenarioList(Output):
    schema_: Literal["perfci.scenarios/1"] = Field("perfci.scenarios/1", alias="schema")
    scenarios: list[ScenarioEntry]
    invalid: list[InvalidFile] = []


# perfci servers list
class ServerListEntry(StrictModel):
    id: str
    spec: str
    enabled: bool = Field(description="the nightly runs it")
    flavor: str | None = None
    version: str | None = Field(None, description="orders releases for sweep and bisect")
    installed: str = Field(description="what this host has of it, nothing fetched or started")


class ServerList(Output):
    schema_: Literal["perfci.servers-list/1"] = Field("perfci.servers-list/1", alias="schema")
    servers: list[ServerListEntry]


# perfci validate
class ValidatedFile(StrictModel):
    path: str
    ok: bool
    error: str | None = None
    profiles: list[ProfileEntry] = []


class Validation(Output):
    schema_: Literal["perfci.validation/1"] = Field("perfci.validation/1", alias="schema")
    ok: bool
    files: list[ValidatedFile]
    pins: list[str] = Field([], description="problems of the project's perfci pins (two commits, a moving ref)")


# perfci history changes
class ChangePoint(StrictModel):
    history_file: str
    metric: str
    change_pct: float | None
    index: int = Field(description="the first night of the new level, counted from 0 in the file")
    result_id: str
    date: str
    server_version: str | None
    before_mean: float
    after_mean: float


class ChangeList(Output):
    schema_: Literal["perfci.changes/1"] = Field("perfci.changes/1", alias="schema")
    pvalue: float
    files: dict[str, int] = Field(description="each history file read: its number of runs")
    changes: list[ChangePoint]


# perfci doctor
class DoctorFinding(StrictModel):
    check: str
    status: Literal["ok", "info", "warn", "fail"]
    found: str
    fix: str = ""


class DoctorReport(Output):
    schema_: Literal["perfci.doctor/1"] = Field("perfci.doctor/1", alias="schema")
    ready: bool = Field(description="no check failed (warnings may remain)")
    findings: list[DoctorFinding]


# perfci nightly
class StandingRegression(StrictModel):
    result_id: str
    case: str
    keys: list[str]


TOLD = ("opened", "commented", "written")  # a case's night that told people of a regression


class CaseNight(StrictModel):
    """What tonight did about one case, for the night's summary and its exit code."""

    case: str = Field(description="the case (runner class/server/scenario/profile/case)")
    status: Literal["opened", "commented", "written", "pending", "not-confirmed", "clean", "closed", "standing",
                    "quiet"]
    issue: int | None = Field(None, description="the issue written or counted on")
    keys: list[str] = Field(default_factory=list, description="the metrics it is about")
    why: str = Field("", description="why it is pending, not confirmed or clean; standing: worse in the history, "
                                     "nothing told tonight; quiet: nothing regressed, no issue open")

    @property
    def told(self) -> bool:
        return self.status in TOLD


class NightSummary(Output):
    schema_: Literal["perfci.nightly/1"] = Field("perfci.nightly/1", alias="schema")
    outcome: Outcome = Field(description="regression when an issue was opened, commented or written tonight "
                                         "(exit 1), else unchanged (exit 0: a regression still pending says so)")
    standing: list[StandingRegression]
    cases: list[CaseNight] = Field(default_factory=list, description="what tonight did about each case")
    actions: list[str] = Field(description="what was done: history appended, issues opened, commented, closed")


# perfci confirm
class ConfirmRun(Output):
    schema_: Literal["perfci.confirm/1"] = Field("perfci.confirm/1", alias="schema")
    outcome: Outcome = Field(description="regression when an A/B confirmed one, else unchanged")
    failed: bool = Field(description="an A/B failed on this runner (its regression stands)")
    confirmations: list[Confirmation]


# perfci bisect
class BisectRecord(Output):
    schema_: Literal["perfci.bisect/1"] = Field("perfci.bisect/1", alias="schema")
    scenario: str
    profile: str
    metric: str
    phases: list[str]
    good: str
    bad: str
    summary: str = Field(description="the sentence a person reads")
    ends_apart: bool = Field(description="the ends are a judged regression")
    first_bad: str | None = Field(None, description="the first slower release or commit, when one step holds it")
    last_good: str | None = None
    spread_between: list[str] | None = None
    undecided_between: list[str] | None = None
    steps: list[BisectStep]
    log: str


SCENARIO_LIST = FileFormat("scenario list", ScenarioList, "perfci.scenarios/1")
SERVER_LIST = FileFormat("server list", ServerList, "perfci.servers-list/1")
VALIDATION = FileFormat("validation", Validation, "perfci.validation/1")
CHANGE_LIST = FileFormat("change points", ChangeList, "perfci.changes/1")
DOCTOR_REPORT = FileFormat("doctor report", DoctorReport, "perfci.doctor/1")
NIGHT_SUMMARY = FileFormat("night summary", NightSummary, "perfci.nightly/1")
CONFIRM_RUN = FileFormat("confirm run", ConfirmRun, "perfci.confirm/1")
BISECT_RECORD = FileFormat("bisect", BisectRecord, "perfci.bisect/1")


# perfci harness-check, perfci baseline diff, an unmeasured scenario edit: the PR check's other reports
class CheckVerdict(Output):
    schema_: Literal["perfci.check-verdict/1"] = Field("perfci.check-verdict/1", alias="schema")
    check: Literal["harness", "baselines", "scenario"]
    outcome: Outcome = Field(description="harness: regression when perfci's change changed what it measures, else "
                                         "unchanged; baselines: moved when an edit moved a threshold (never a "
                                         "regression: the edit is the PR's to explain), else unchanged; scenario: "
                                         "unchanged, an edit that changes nothing a run executes (no A/B ran)")
    verdict_line: str = Field(description="the report's verdict, for people")


CHECK_VERDICT = FileFormat("check verdict", CheckVerdict, "perfci.check-verdict/1")


# perfci run
class RunEntry(StrictModel):
    path: str = Field(description="the result file (`perfci schema result`)")
    id: str
    case: str
    status: str = Field(description="ok, or skipped (the server cannot run this case)")
    valid: bool = Field(description="the validity gate's verdict: an invalid run is never judged")
    reasons: list[str] = Field([], description="why it is invalid")
    metrics: dict[str, float] = Field({}, description="run-level metrics, `phase.metric` and `headline.metric a/b` "
                                                      "(what baselines and compare judge)")


class RunOutput(Output):
    schema_: Literal["perfci.run/1"] = Field("perfci.run/1", alias="schema")
    results: list[RunEntry]
    matrix_report: str | None = Field(None, description="the matrix's Markdown report, when the scenario has axes")


# perfci plan nightly
class PlanRow(StrictModel):
    server: str
    scenario: str
    cases: int
    minutes: float = Field(description="the profile's expected_minutes: one bench job, every case of the scenario")


class NightPlan(Output):
    """What a nightly costs: one bench job per server and scenario, packed onto runners
    so that each runner's night fits the window with room for one reference A/B, and
    the false-issue budget's case count per runner."""

    schema_: Literal["perfci.plan/1"] = Field("perfci.plan/1", alias="schema")
    profile: str
    rows: list[PlanRow]
    window_hours: float
    confirm_minutes: float = Field(description="kept free per runner for a reference A/B on a night that flags")
    total_minutes: float
    total_cases: int
    runners: list[list[int]] = Field(description="per runner, the rows (indexes) it runs; empty when a job cannot fit")
    too_long: list[int] = Field([], description="rows whose job alone does not fit one runner's night")

    @property
    def cases_per_runner(self) -> int:
        """The budget's --cases (PERFCI_CASES): the most cases one runner runs a night."""
        return max((sum(self.rows[i].cases for i in jobs) for jobs in self.runners), default=self.total_cases)

    @classmethod
    def of(cls, profile: str, rows: list[PlanRow], window_hours: float, confirm_minutes: float) -> NightPlan:
        """The fewest runners whose nights fit the window (each runner's jobs plus one
        reference A/B), jobs spread longest first onto the least-loaded runner, so the
        runners' minutes (and cases) come out even, as GitHub hands queued jobs to
        whichever runner is free."""
        usable = window_hours * 60 - confirm_minutes
        too_long = [i for i, r in enumerate(rows) if r.minutes > usable]
        jobs = sorted((i for i in range(len(rows)) if i not in too_long), key=lambda i: -rows[i].minutes)
        total = sum(rows[i].minutes for i in jobs)
        n = max(1, math.ceil(total / usable)) if jobs and usable > 0 else 0
        while n:
            bins: list[list[int]] = [[] for _ in range(n)]
            loads = [0.0] * n
            for i in jobs:
                least = loads.index(min(loads))
                bins[least].append(i)
                loads[least] += rows[i].minutes
            if max(loads) <= usable:
                break
            n += 1
        return cls(profile=profile, rows=rows, window_hours=window_hours, confirm_minutes=confirm_minutes,
                   total_minutes=sum(r.minutes for r in rows), total_cases=sum(r.cases for r in rows),
                   runners=bins if n else [], too_long=too_long)


RUN_OUTPUT = FileFormat("run output", RunOutput, "perfci.run/1")
NIGHT_PLAN = FileFormat("night plan", NightPlan, "perfci.plan/1")
