"""The history's values: one record per run and case, annotations (exclusions,
resets), and one case's records with the annotations that apply to it. Reading and
writing them is store/history_files.py; change points over them are judge/changes.py.

The history is also where baselines come from (model/baseline.py
`baseline_from_history`): the last N valid samples of the case after its last reset
point. A record keeps what a baseline sample needs and the night's verdict. Two lists:
`regressed`, every key the night was worse on beyond tolerance (a regression, or a
change on the bad side one run could not call): what a streak of bad nights counts;
and `standing`, the keys whose regression stands: judged a regression (and not cleared
by its confirming A/B), worse where a persisting change point calls it
(alert/nightly.py), or worse again right after a night that stood on the same key. Only
a standing key keeps the night out of the baseline it regressed against (else a
persisting slowdown becomes its own baseline in a few nights and its issue closes
itself), until a reset accepts it. Leaving out every worse night instead ratchets:
where the tolerance is below the noise, it cuts the baseline's lower tail, the baseline
drifts up and pure noise opens issues (tests/alert/test_nightly_ratchet.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.metrics import counters_per_txn, flatten
from perfci.model.result import HostSignature, Rerun, Result

HISTORY_SCHEMA = "perfci.history/4"
DEFAULT_HISTORY_WINDOW = 10


class HistoryRecord(StrictModel):
    """One run of one case, as the history keeps it (one JSON line)."""

    schema_: Literal["perfci.history/4"] = Field("perfci.history/4", alias="schema")
    result_id: str
    date: str = ""
    harness_sha: str | None = None
    scenario_hash: str
    server_version: str | None = None
    metrics: dict[str, float]
    # /2: what a baseline sample needs, and what the nightly judged
    valid: bool = True
    host: HostSignature | None = None
    counters: dict[str, float] = {}
    reproduce: str = ""
    rerun: Rerun | None = Field(None, description="reproduce, typed (None in records of perfci before 2026-11-29)")
    run_url: str = ""
    regressed: list[str] = Field([], description="metric keys worse beyond tolerance against the history that night "
                                                 "(judged a regression, or inconclusive on the bad side)")
    judged_since: str | None = Field(None, description="the reset point (a result id) in effect when it was judged")
    # /3
    standing: list[str] = Field([], description="metric keys whose regression stood that night: the night stays out "
                                                "of the baseline for them")
    measure: Literal["time", "work"] = Field("time", description="work: a counted run (its series is the case's "
                                                                 "`<profile>.work`; only instructions_per_txn is judged)")
    # /4
    server_commit: str | None = Field(None, description="the commit a build: server was built from (the dashboard's "
                                                        "axis and compare links)")
    ab: Literal["confirmed", "not-confirmed"] | None = Field(None, description="what that night's reference A/B found "
                                                                               "(None: none ran)")


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 lines carried no schema and no baseline fields: those default (valid, no counters)."""
    return {**data, "schema": "perfci.history/2"}


def _v2_to_v3(data: JsonObject) -> JsonObject:
    """/2 kept every worse night out of the baseline: its regressed keys stood."""
    return {**data, "schema": "perfci.history/3", "standing": data.get("regressed", [])}


def _v3_to_v4(data: JsonObject) -> JsonObject:
    """/3 recorded no server commit and no A/B outcome: none known."""
    return {**data, "schema": HISTORY_SCHEMA}


HISTORY_LINE = FileFormat("history record", HistoryRecord, HISTORY_SCHEMA,
                          upgrades={"perfci.history/1": _v1_to_v2, "perfci.history/2": _v2_to_v3,
                                    "perfci.history/3": _v3_to_v4},
                          unversioned="perfci.history/1")


@dataclass(frozen=True)
class NightVerdict:
    """What one result was judged against its history: the keys worse beyond tolerance,
    and among them those judged a regression that no confirming A/B cleared."""

    worse: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()
    ab: Literal["confirmed", "not-confirmed"] | None = None  # the night's reference A/B, where one ran


class Annotation(StrictModel):
    """A mark on the history: a sample excluded (kept, never used), or a case's
    baseline reset at a result (samples before it no longer count)."""

    kind: Literal["exclude", "reset"]
    result_id: str
    case: str = Field("", description="reset: the case's history file under the root, without .jsonl")
    reason: str
    date: str
    by: str = ""


class RunSummary(TypedDict):
    """What a history record and a baseline sample both keep of a result."""

    result_id: str
    date: str
    harness_sha: str
    scenario_hash: str
    server_version: str
    host: HostSignature
    metrics: dict[str, float]
    counters: dict[str, float]
    reproduce: str
    rerun: Rerun | None


def run_summary(result: Result) -> RunSummary:
    return RunSummary(result_id=result.id, date=result.finished_at, harness_sha=result.harness.git_sha,
                      scenario_hash=result.scenario.hash,
                      server_version=result.server.full_version or result.server.version,
                      host=result.host.signature(), metrics=flatten(result), counters=counters_per_txn(result),
                      reproduce=result.reproduce, rerun=result.rerun)


def summary_line(result: Result, regressed: list[str] | None = None, judged_since: str | None = None,
                 run_url: str = "", standing: list[str] | None = None,
                 ab: Literal["confirmed", "not-confirmed"] | None = None) -> HistoryRecord:
    return HistoryRecord(**run_summary(result), valid=result.validity.valid, run_url=run_url, measure=result.measure,
                         regressed=sorted(regressed or []), judged_since=judged_since, standing=sorted(standing or []),
                         server_commit=result.server.commit, ab=ab)


def case_name(root: Path, path: Path) -> str:
    """A case's name in annotations: its history file under the root, without .jsonl."""
    return Path(path).relative_to(root).with_suffix("").as_posix()


@dataclass
class CaseHistory:
    """One case's records with the annotations that apply to it."""

    path: Path
    key: str
    records: list[HistoryRecord]
    excluded: dict[str, Annotation] = field(default_factory=dict)
    resets: list[Annotation] = field(default_factory=list)

    @property
    def reset_id(self) -> str | None:
        return self.resets[-1].result_id if self.resets else None

    def since_reset(self) -> list[HistoryRecord]:
        """Records from the last reset point on (all when there is none or it is not found)."""
        ids = [r.result_id for r in self.records]
        start = ids.index(self.reset_id) if self.reset_id in ids else 0
        return self.records[start:]

    def usable(self, scenario_hash: str | None = None) -> list[HistoryRecord]:
        """Valid, not excluded, after the last reset, of one scenario hash (default: the newest's)."""
        kept = [r for r in self.since_reset() if r.valid and r.result_id not in self.excluded]
        wanted = scenario_hash or (kept[-1].scenario_hash if kept else None)
        return [r for r in kept if r.scenario_hash == wanted]

    def baseline_records(self, scenario_hash: str | None, window: int, skip: str = "",
                         host: HostSignature | None = None) -> list[HistoryRecord]:
        """What a baseline takes: usable records of `host` (HostSignature's policy) on which
        no regression stood against the current reset's baseline (such a night joins when
        a later reset accepts it)."""
        kept = [r for r in self.usable(scenario_hash) if r.result_id != skip
                and not (r.standing and r.judged_since == self.reset_id)
                and (host is None or host.mismatch(r.host) is None)]
        return kept[-window:]

    def standing(self, verdict: NightVerdict) -> list[str]:
        """The keys of tonight's verdict whose regression stands: judged a regression, or
        worse again right after the newest usable night stood on the same key."""
        last = next((r for r in reversed(self.usable()) if r.judged_since == self.reset_id), None)
        carried = set(last.standing) if last else set()
        return sorted(set(verdict.regressions) | {k for k in verdict.worse if k in carried})

    def regressed_streak(self, key: str, scenario_hash: str | None, skip: str = "") -> list[str]:
        """The newest usable nights (other than `skip`), oldest first, that each regressed
        on `key` under the current reset: how long a regression has persisted."""
        streak: list[str] = []
        for r in reversed([r for r in self.usable(scenario_hash) if r.result_id != skip]):
            if key not in r.regressed or r.judged_since != self.reset_id:
                break
            streak.insert(0, r.result_id)
        return streak
