"""The machine-readable comparison (`perfci compare --json FILE`): every verdict
with the numbers behind it and the rules that produced it (metric specs,
confidence, CV floor, prior), so a verdict can be re-checked later. Like Otava's
analysed series, it records the options it was computed with."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.judge.compare import CaseComparison, Rules
from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat
from perfci.model.verdicts import Direction, Outcome

COMPARISON_SCHEMA = "perfci.comparison/1"


class RulesRecord(StrictModel):
    confidence: float
    cv_floor: float
    prior_cv: float
    prior_df: int
    follow: Literal["line", "version"]
    test: str = "moderated pooled two-sample t on log values"
    flag_rule: str = "beyond tolerance AND the interval excludes 1"


class MetricVerdict(StrictModel):
    key: str
    direction: Direction
    tolerance: float
    floor: float = 0.0
    verdict: Outcome
    reason: str
    change_pct: float | None
    ratio: float | None
    low: float | None
    high: float | None
    df: int | None
    cv: float | None
    baseline: list[float]
    current: list[float]
    movers: list[tuple[str, float, float]] = Field([], description="(counter, baseline per txn, current per txn)")


class CaseRecord(StrictModel):
    runner_class: str
    server: str
    scenario: str
    profile: str
    case: str
    server_versions: list[str]
    scenario_hash: str
    results: list[str]
    baseline_file: str | None
    baseline_samples: int
    skipped: str | None
    specs_from: str
    warnings: list[str]
    metrics: list[MetricVerdict]


class ComparisonFile(StrictModel):
    schema_: Literal["perfci.comparison/1"] = Field("perfci.comparison/1", alias="schema")
    rules: RulesRecord
    cases: list[CaseRecord]


COMPARISON_FILE = FileFormat("comparison", ComparisonFile, COMPARISON_SCHEMA)


def _rules(rules: Rules) -> RulesRecord:
    return RulesRecord(confidence=rules.confidence, cv_floor=rules.cv_floor, prior_cv=rules.prior_cv,
                       prior_df=rules.prior_df, follow=rules.follow)


def record(comparisons: list[CaseComparison], rules: Rules) -> ComparisonFile:
    cases = []
    for comp in comparisons:
        ident = comp.identity
        metrics = []
        for row in comp.rows:
            v, est = row.verdict, row.verdict.estimate
            metrics.append(MetricVerdict(
                key=row.key, direction=row.spec.direction,
                tolerance=row.spec.tolerance, floor=row.spec.floor, verdict=v.verdict,
                reason=v.reason, change_pct=v.change_pct,
                ratio=est.ratio if est else None, low=est.low if est else None, high=est.high if est else None,
                df=est.df if est else None, cv=est.cv if est else None,
                baseline=row.baseline, current=row.current, movers=row.movers))
        cases.append(CaseRecord(
            runner_class=ident.runner_class, server=ident.server, scenario=ident.scenario, profile=ident.profile,
            case=ident.case, server_versions=sorted({r.server.full_version or r.server.version for r in comp.results}),
            scenario_hash=comp.results[0].scenario.hash, results=[r.id for r in comp.results],
            baseline_file=str(comp.baseline_file) if comp.baseline_file else None,
            baseline_samples=len(comp.baseline.samples) if comp.baseline else 0,
            skipped=comp.skipped, specs_from=comp.specs_from, warnings=comp.warnings, metrics=metrics))
    return ComparisonFile(rules=_rules(rules), cases=cases)
