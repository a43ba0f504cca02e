"""Paired A/B runs: the most sensitive comparison for a version bump or a config change.

Rounds alternate the order (A B, B A, A B, ...) so that a slow drift of the host
weighs on both sides alike; each run starts from a fresh server and the same
seeded dataset. The ratio B/A is taken per round and judged with a paired t
interval and the usual rule (beyond tolerance AND interval excluding 1).
"""

from __future__ import annotations

import statistics
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from perfci.judge.compare import compare_specs
from perfci.judge.stats import DEFAULT_CONFIDENCE, Verdict, before_ratio, judge_estimate, paired_interval
from perfci.model.ab_verdict import AbMetric, AbSide, AbVerdict, SideArgs, overall
from perfci.model.metrics import MetricSpec, flatten, judged_keys, presentation
from perfci.model.result import AbRole, Result
from perfci.model.verdicts import Outcome
from perfci.providers.capabilities import Requested
from perfci.report.table import change_cell, table, verdict_label
from perfci.run.execute import execute
from perfci.run.plan import plan_run, use_snapshots
from perfci.run.snapshots import SnapshotCache
from perfci.sessions.session import save
from perfci.util.progress import Progress
from perfci.util.runner import temp_prefix


@dataclass(frozen=True)
class Side:
    name: str                 # "a" or "b"
    server_spec: str
    overrides: list[Requested]
    scenario: str | None = None  # this side's scenario file, when it differs (a PR's base version)

    def args(self) -> SideArgs:
        return SideArgs(server=self.server_spec,
                        config=[f"{r.name}={r.value}" if r.value is not None else r.name for r in self.overrides])

    def describe(self) -> str:
        return self.args().describe()


@dataclass
class PairedRow:
    key: str
    spec: MetricSpec
    a: list[float]
    b: list[float]
    verdict: Verdict


def round_order(round_index: int) -> tuple[int, int]:
    """0-based round -> which side goes first (0 = A): A B, B A, A B, ..."""
    return (0, 1) if round_index % 2 == 0 else (1, 0)


def run_ab(scenario: str, profile: str, sides: tuple[Side, Side], rounds: int, out_dir: Path,
           workdir_parent: Path, progress: Progress, runner_class: str = "local",
           case: str | None = None) -> list[list[Result]]:
    """Run the rounds; returns results[side][round]. Every result file is written as it comes."""
    results: list[list[Result]] = [[], []]
    ab_id = uuid.uuid4().hex[:8]
    for r in range(rounds):
        for side_index in round_order(r):
            side = sides[side_index]
            progress.info(f"== round {r + 1} of {rounds}, side {side.name.upper()}: {side.describe()}")
            plan = plan_run(side.scenario or scenario, profile, side.server_spec, side.overrides,
                            workdir_parent / f"{temp_prefix()}ab-{uuid.uuid4().hex[:8]}", case_pattern=case)
            use_snapshots(plan, SnapshotCache())  # both sides start from the very same dataset
            result = execute(plan, progress, runner_class=runner_class).model_copy(
                update={"ab": AbRole(id=ab_id, side="a" if side_index == 0 else "b", round=r + 1, of=rounds)})
            save(result, Path(out_dir))  # as it comes: an interrupted A/B keeps its finished rounds
            results[side_index].append(result)
    return results


# Two rounds give one degree of freedom: two similar ratios make an interval of nothing,
# and a host drift that curves over the four runs (A B B A: B in the middle both times)
# reads as a change of B. Seen: an A/A of identical configs at B/A 0.9472 and 0.9474,
# "regression" at 99.5 %. From three rounds a rounds A/B judges; with two it says what
# it measured and leaves the verdict inconclusive.
MIN_JUDGED_ROUNDS = 3


def judge_pairs(results: list[list[Result]], confidence: float = DEFAULT_CONFIDENCE) -> list[PairedRow]:
    """Per metric: the paired ratio B/A over rounds, its interval and verdict (with
    fewer than MIN_JUDGED_ROUNDS rounds, never a regression or an improvement)."""
    a_flat = [flatten(r) for r in results[0]]
    b_flat = [flatten(r) for r in results[1]]
    specs, _ = compare_specs(results[1][0])
    rows = []
    for key, spec in judged_keys(results[0][0], specs):
        pairs = [(a[key], b[key]) for a, b in zip(a_flat, b_flat) if key in a and key in b]
        a_vals, b_vals = [p[0] for p in pairs], [p[1] for p in pairs]
        floor = spec.floor if not key.startswith("headline.") else 0.0
        if not pairs:
            verdict = Verdict(Outcome.UNCHANGED, None, None, spec.tolerance, spec.direction, "no value on either side")
        else:
            verdict = before_ratio(b_vals, a_vals, spec.direction, spec.tolerance, floor) or judge_estimate(
                paired_interval([b / a for a, b in pairs], confidence), spec.direction, spec.tolerance)
            if len(pairs) < MIN_JUDGED_ROUNDS and verdict.verdict in (Outcome.REGRESSION, Outcome.IMPROVEMENT):
                verdict = replace(verdict, verdict=Outcome.INCONCLUSIVE,
                                  reason=f"{len(pairs)} rounds: one degree of freedom, not judged "
                                         f"({MIN_JUDGED_ROUNDS} or more rounds judge)")
        rows.append(PairedRow(key, spec, a_vals, b_vals, verdict))
    return rows


def rounds_verdict_line(rows: list[PairedRow]) -> str:
    worse = [r.key for r in rows if r.verdict.verdict == Outcome.REGRESSION]
    if worse:
        return f"**Regression** in {len(worse)} of {len(rows)} judged metrics: {', '.join(worse[:3])}"
    open_ = [r.key for r in rows if r.verdict.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE)]
    if open_:
        return f"**No regression found**, {len(open_)} of {len(rows)} judged metrics not decided: {', '.join(open_[:3])}"
    return "**No regression found.**"


ROUNDS_COLUMNS = ["metric", "A mean", "B mean", "B vs A [interval]", "tolerance", "unit", "verdict"]


def ab_markdown(sides: tuple[Side, Side], results: list[list[Result]], rows: list[PairedRow],
                confidence: float) -> str:
    """The rounds A/B's report, read first: the verdict, the rows that need a look, the
    unchanged ones and how it ran folded."""
    first = results[0][0]
    host = first.host
    a_srv, b_srv = results[0][0].server, results[1][0].server
    quiet = [r for r in rows if r.verdict.verdict == Outcome.UNCHANGED]
    attention = [r for r in rows if r not in quiet]
    lines = [f"## perfci A/B: {first.scenario.name} · profile `{first.scenario.profile}`", "", rounds_verdict_line(rows)]
    if attention:
        lines += ["", *table(ROUNDS_COLUMNS, (paired_cells(row) for row in attention))]
    if quiet:
        lines += ["", f"<details><summary>{len(quiet)} judged metric{'s' if len(quiet) > 1 else ''} within tolerance</summary>",
                  "", *table(ROUNDS_COLUMNS, (paired_cells(row) for row in quiet)), "", "</details>"]
    lines += ["", "<details><summary>How this A/B was run</summary>", "",
              f"- A: `{sides[0].describe()}` ({a_srv.flavor} {a_srv.full_version})",
              f"- B: `{sides[1].describe()}` ({b_srv.flavor} {b_srv.full_version})",
              f"- {len(results[0])} paired rounds, order alternating (A B, B A, …) · host `{host.hostname}` "
              f"({host.cpu_model}, {host.cpus} CPUs) · scenario hash `{first.scenario.hash[:19]}…`",
              f"- interval: {confidence:.1%} paired t on log(B/A); flagged only beyond tolerance AND excluding 1",
              "", "</details>", ""]
    return "\n".join(lines)


def paired_cells(row: PairedRow) -> list[str]:
    est = row.verdict.estimate
    return [f"`{row.key}` {row.spec.direction.arrow}", f"{statistics.mean(row.a):.4g}" if row.a else "–",
            f"{statistics.mean(row.b):.4g}" if row.b else "–",
            change_cell(est.ratio, est.low, est.high, row.spec.direction) if est and est.ratio is not None else "–",
            f"±{row.spec.tolerance:.0%}", presentation(row.key)[1],
            # a round's `unchanged` is its point within the tolerance (judge/stats.judge_estimate)
            verdict_label(row.verdict.verdict, row.verdict.change_pct, row.spec.direction, point_only=True)]


def rounds_verdict(sides: tuple[Side, Side], results: list[list[Result]], rows: list[PairedRow],
                   report_file: str | None = None) -> AbVerdict:
    """A rounds A/B's verdict for machines (`perfci ab --json`)."""
    first = results[0][0]
    metrics = [AbMetric(key=r.key, judged=True, verdict=r.verdict.verdict, a=statistics.mean(r.a) if r.a else 0.0,
                        b=statistics.mean(r.b) if r.b else 0.0,
                        ratio=r.verdict.estimate.ratio if r.verdict.estimate else None,
                        low=r.verdict.estimate.low if r.verdict.estimate else None,
                        high=r.verdict.estimate.high if r.verdict.estimate else None,
                        confidence=r.verdict.estimate.confidence if r.verdict.estimate else None,
                        reason=r.verdict.reason) for r in rows]
    outcome = overall(metrics)
    worse = [m.key for m in metrics if m.verdict == Outcome.REGRESSION]
    return AbVerdict(outcome=outcome, verdict_line=rounds_verdict_line(rows), mode="rounds", scenario=first.scenario.name,
                     profile=first.scenario.profile, case=first.case, scenario_hash=first.scenario.hash,
                     runner_class=first.host.runner_class, host=first.host.hostname,
                     a=AbSide(spec=sides[0].describe(), version=results[0][0].server.full_version,
                              run=sides[0].args()),
                     b=AbSide(spec=sides[1].describe(), version=results[1][0].server.full_version,
                              run=sides[1].args()),
                     sizing=f"{len(results[0])} paired rounds", regressions=worse, metrics=metrics,
                     report_file=report_file)
