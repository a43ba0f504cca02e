"""CSV for spreadsheets and pandas: the history (one row per night and metric) and a
comparison (one row per case and metric), long format, a header row first. Numbers are
written as Python prints them (full precision); an empty cell is a value not there."""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Iterable

from perfci.judge.compare import CaseComparison
from perfci.model.history import CaseHistory

HISTORY_COLUMNS = ["case", "result_id", "date", "server_version", "scenario_hash", "measure", "valid", "excluded",
                   "metric", "value", "regressed", "standing", "run_url"]
COMPARISON_COLUMNS = ["case", "results", "server_versions", "scenario_hash", "baseline_samples", "metric", "direction",
                      "tolerance", "baseline_mean", "current_mean", "change_pct", "ratio", "ratio_low", "ratio_high",
                      "confidence", "verdict", "reason"]


def to_csv(header: list[str], rows: Iterable[list[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue()


def history_rows(case: str, hist: CaseHistory) -> Iterable[list[object]]:
    for r in hist.records:
        for key, value in sorted(r.metrics.items()):
            yield [case, r.result_id, r.date, r.server_version, r.scenario_hash, r.measure, r.valid,
                   r.result_id in hist.excluded, key, value, key in r.regressed, key in r.standing, r.run_url]


def comparison_rows(comparisons: list[CaseComparison]) -> Iterable[list[object]]:
    for comp in comparisons:
        first = comp.results[0]
        versions = " ".join(sorted({r.server.full_version or r.server.version for r in comp.results}))
        for row in comp.rows:
            est = row.verdict.estimate
            yield [comp.identity.slug_path, " ".join(r.id for r in comp.results), versions, first.scenario.hash,
                   len(row.baseline), row.key, row.spec.direction, row.spec.tolerance,
                   statistics.fmean(row.baseline) if row.baseline else None,
                   statistics.fmean(row.current) if row.current else None, row.verdict.change_pct,
                   est.ratio if est else None, est.low if est else None, est.high if est else None,
                   est.confidence if est else None, row.verdict.verdict, row.verdict.reason]
