"""Append-only history of result summaries: one JSON line per run and case, plus
annotations (exclusions, resets). Change points over it are judge/changes.py; the
baseline made from it is store/baseline.py (baseline_from_history).

Layout: history/<runner class>/<flavor>-<major.minor>/<scenario>/<profile>/<case>.jsonl,
one JSON line per run. The workflows keep this directory on a results branch.

The history is also where baselines come from (`baseline_from_history`): the last N
valid samples of the case after its last reset point. A record keeps what a baseline
sample needs and the night's verdict. Two lists: `regressed`, every key the night
was worse on beyond tolerance (a regression, or a change on the bad side one run
could not call): what a streak of bad nights counts; and `standing`, the keys whose
regression stands: judged a regression (and not cleared by its confirming A/B), worse
where a persisting change point calls it (alert/nightly.py), or worse again right after
a night that stood on the same key. Only a standing key
keeps the night out of the baseline it regressed against (else a persisting slowdown
becomes its own baseline in a few nights and its issue closes itself), until a reset
accepts it. Leaving out every worse night instead ratchets: where the tolerance is
below the noise, it cuts the baseline's lower tail, the baseline drifts up and pure
noise opens issues (tests/test_nightly_ratchet.py). Exclusions
and resets are annotations in `perfci-annotations.jsonl` at the root: samples are
never deleted, only marked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import Field, ValidationError

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.metrics import counters_per_txn, flatten
from perfci.model.result import HostSignature, Result
from perfci.store import jsonl
from perfci.util.errors import BadInput

HISTORY_SCHEMA = "perfci.history/3"
ANNOTATIONS = "perfci-annotations.jsonl"
DEFAULT_HISTORY_WINDOW = 10


class HistoryRecord(StrictModel):
    """One run of one case, as the history keeps it (one JSON line)."""

    schema_: Literal["perfci.history/3"] = Field("perfci.history/3", alias="schema")
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
    run_url: str = ""
    regressed: list[str] = Field([], description="metric keys worse beyond tolerance against the history that night "
                                                 "(judged a regression, or inconclusive on the bad side)")
    judged_since: str | None = Field(None, description="the reset point (a result id) in effect when it was judged")
    # /3
    standing: list[str] = Field([], description="metric keys whose regression stood that night: the night stays out "
                                                "of the baseline for them")


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 lines carried no schema and no baseline fields: those default (valid, no counters)."""
    return {**data, "schema": "perfci.history/2"}


def _v2_to_v3(data: JsonObject) -> JsonObject:
    """/2 kept every worse night out of the baseline: its regressed keys stood."""
    return {**data, "schema": HISTORY_SCHEMA, "standing": data.get("regressed", [])}


HISTORY_LINE = FileFormat("history record", HistoryRecord, HISTORY_SCHEMA,
                          upgrades={"perfci.history/1": _v1_to_v2, "perfci.history/2": _v2_to_v3},
                          unversioned="perfci.history/1")


@dataclass(frozen=True)
class NightVerdict:
    """What one result was judged against its history: the keys worse beyond tolerance,
    and among them those judged a regression that no confirming A/B cleared."""

    worse: tuple[str, ...] = ()
    regressions: tuple[str, ...] = ()


class Annotation(StrictModel):
    """A mark on the history: a sample excluded (kept, never used), or a case's
    baseline reset at a result (samples before it no longer count)."""

    kind: Literal["exclude", "reset"]
    result_id: str
    case: str = Field("", description="reset: the case's history file under the root, without .jsonl")
    reason: str
    date: str
    by: str = ""


def history_path(root: Path, result: Result, follow: Follow = DEFAULT_FOLLOW) -> Path:
    return CaseIdentity.of(result, follow).path(root, ".jsonl")


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


def run_summary(result: Result) -> RunSummary:
    return RunSummary(result_id=result.id, date=result.finished_at, harness_sha=result.harness.git_sha,
                      scenario_hash=result.scenario.hash,
                      server_version=result.server.full_version or result.server.version,
                      host=result.host.signature(), metrics=flatten(result), counters=counters_per_txn(result),
                      reproduce=result.reproduce)


def summary_line(result: Result, regressed: list[str] | None = None, judged_since: str | None = None,
                 run_url: str = "", standing: list[str] | None = None) -> HistoryRecord:
    return HistoryRecord(**run_summary(result), valid=result.validity.valid, run_url=run_url,
                         regressed=sorted(regressed or []), judged_since=judged_since, standing=sorted(standing or []))


def _parse_record(line: str, source: str) -> HistoryRecord:
    return HISTORY_LINE.parse_text(line, source)


def read_history(path: Path) -> list[HistoryRecord]:
    """Lines of a history file; a damaged line is skipped with a warning (store/jsonl.py).
    Lines written before records carried a schema are read as /1."""
    return jsonl.read(path, _parse_record)[0]


def append(results: list[Result], root: Path | Histories, follow: Follow = DEFAULT_FOLLOW,
           verdicts: dict[str, NightVerdict] | None = None, run_url: str = "") -> list[tuple[Path, int]]:
    """Append each result's summary to its history file; a result already there is skipped.
    `verdicts`: what each result (by id) was judged against the history."""
    return Histories.of(root).append(results, follow, verdicts, run_url)


def _parse_annotation(line: str, source: str) -> Annotation:
    try:
        return Annotation.model_validate_json(line)
    except ValidationError:
        raise BadInput(f"{source}: not a history annotation (kind exclude|reset, result_id, reason, date)") from None


def read_annotations(root: Path) -> list[Annotation]:
    return jsonl.read(Path(root) / ANNOTATIONS, _parse_annotation)[0]


def annotate(root: Path, annotation: Annotation) -> None:
    jsonl.append(Path(root) / ANNOTATIONS, annotation, _parse_annotation)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def case_name(root: Path, path: Path) -> str:
    """A case's name in annotations: its history file under the root, without .jsonl."""
    return Path(path).relative_to(root).with_suffix("").as_posix()


def case_files(root: Path) -> list[Path]:
    """Every case's history file (runner class/server/scenario/profile/case.jsonl)."""
    return sorted(Path(root).glob("*/*/*/*/*.jsonl"))


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


def case_history(root: Path | Histories, case: CaseIdentity | Path) -> CaseHistory:
    return Histories.of(root).case(case)


class Histories:
    """The history directory with each case's file and the annotations read at most once:
    a night opens one and passes it along (compare, issues, append, change points), and
    what it appends is added to what it holds."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._cases: dict[Path, CaseHistory] = {}
        self._notes: list[Annotation] | None = None

    @classmethod
    def of(cls, root: Path | Histories) -> Histories:
        return root if isinstance(root, Histories) else cls(root)

    def _read_annotations(self) -> list[Annotation]:
        if self._notes is None:
            self._notes = read_annotations(self.root)
        return self._notes

    def case(self, case: CaseIdentity | Path) -> CaseHistory:
        path = case if isinstance(case, Path) else case.path(self.root, ".jsonl")
        if path not in self._cases:
            key = case_name(self.root, path)
            notes = self._read_annotations()
            self._cases[path] = CaseHistory(path, key, read_history(path),
                                            excluded={a.result_id: a for a in notes if a.kind == "exclude"},
                                            resets=[a for a in notes if a.kind == "reset" and a.case == key])
        return self._cases[path]

    def append(self, results: list[Result], follow: Follow = DEFAULT_FOLLOW,
               verdicts: dict[str, NightVerdict] | None = None, run_url: str = "") -> list[tuple[Path, int]]:
        written: dict[Path, int] = {}
        for result in results:
            if not result.ran:
                continue
            hist = self.case(CaseIdentity.of(result, follow))
            if any(e.result_id == result.id for e in hist.records):
                written.setdefault(hist.path, 0)
                continue
            verdict = (verdicts or {}).get(result.id, NightVerdict())
            record = summary_line(result, list(verdict.worse), hist.reset_id, run_url, hist.standing(verdict))
            jsonl.append(hist.path, record, _parse_record)
            hist.records.append(record)
            written[hist.path] = written.get(hist.path, 0) + 1
        return list(written.items())


def exclude(root: Path, result_id: str, reason: str, by: str = "") -> list[Path]:
    """Mark a sample as excluded wherever it is; the files that hold it (none: BadInput)."""
    holders = [p for p in case_files(root) if any(r.result_id == result_id for r in read_history(p))]
    if not holders:
        raise BadInput(f"{root}: no history record with result id {result_id!r} (see the history files' result_id)")
    annotate(root, Annotation(kind="exclude", result_id=result_id, reason=reason, date=now(), by=by))
    return holders


def reset(root: Path, path: Path, result_id: str, reason: str, by: str = "") -> Annotation:
    """Reset a case's baseline at `result_id`: from there on, its samples are the baseline."""
    records = read_history(path)
    if not any(r.result_id == result_id for r in records):
        raise BadInput(f"{path}: no record with result id {result_id!r} to reset at")
    note = Annotation(kind="reset", result_id=result_id, case=case_name(Path(root), path), reason=reason,
                      date=now(), by=by)
    annotate(root, note)
    return note
