"""The history on disk: an append-only JSON line per run and case, plus annotations
(exclusions, resets) in `perfci-annotations.jsonl` at the root: samples are never
deleted, only marked. The values are model/history.py.

Layout: history/<runner class>/<flavor>-<major.minor>/<scenario>/<profile>/<case>.jsonl,
one JSON line per run. The workflows keep this directory on a results branch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from perfci.model.history import (
    HISTORY_LINE,
    Annotation,
    CaseHistory,
    HistoryRecord,
    NightVerdict,
    case_name,
    summary_line,
)
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.result import Result
from perfci.store import jsonl
from perfci.util.errors import BadInput

ANNOTATIONS = "perfci-annotations.jsonl"


def history_path(root: Path, result: Result, follow: Follow = DEFAULT_FOLLOW) -> Path:
    return CaseIdentity.of(result, follow).path(root, ".jsonl")


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


def case_files(root: Path) -> list[Path]:
    """Every case's history file (runner class/server/scenario/profile/case.jsonl)."""
    return sorted(Path(root).glob("*/*/*/*/*.jsonl"))


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
            record = summary_line(result, list(verdict.worse), hist.reset_id, run_url, hist.standing(verdict), verdict.ab)
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
