"""`perfci ab --measure both`: a counting A/B, then a timed A/B of the same two sides
(counting and timing never share a burst), each in half the budget and at half the
A/B's false-alarm level, judged as they would be alone; one verdict says where the change
shows (judge/families.py): more code, or the same work taking longer."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from perfci.judge import design
from perfci.judge.families import change_family
from perfci.judge.paired import ALPHA
from perfci.model.ab_verdict import AbVerdict
from perfci.report.both import both_markdown, both_verdict
from perfci.report.opening import with_opening
from perfci.sessions.rounds import Side
from perfci.sessions.sized_ab import AbPlan, Sized, SizedAB, plan_and_size, run_sized
from perfci.util.files import write_atomic
from perfci.util.progress import Progress

PARTS = ("work", "time")  # the count first: its verdict is the news for a code change, and it is the cheaper


def part_plans(ab: AbPlan) -> list[AbPlan]:
    """The two A/Bs `--measure both` runs: the budget and the false-alarm level shared
    (Bonferroni: either part flagging falsely stays within the A/B's level); the count
    aims at the 1 % steps of code, or at --target-mde where that is smaller."""
    shared = dataclasses.replace(ab, budget_minutes=ab.budget_minutes / len(PARTS),
                                 alpha=(ab.alpha or ALPHA) / len(PARTS))
    return [dataclasses.replace(shared, measure="work", target=min(ab.target, design.WORK_TARGET_MDE)),
            dataclasses.replace(shared, measure="time")]


@dataclass(frozen=True)
class BothAB:
    parts: list[SizedAB]
    report: str
    verdict: AbVerdict


def size_both(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None,
              ab: AbPlan, runner_class: str) -> list[tuple[AbPlan, Sized]]:
    """Both parts planned and sized (every input check of both, the counter's included)
    before any server starts."""
    return [(plan, plan_and_size(scenario, profile, sides, parent, case, plan, runner_class))
            for plan in part_plans(ab)]


def run_both(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None, ab: AbPlan,
             out_dir: Path, progress: Progress, runner_class: str,
             setup_sql: tuple[list[str], list[str]] = ([], [])) -> BothAB:
    sized = size_both(scenario, profile, sides, parent, case, ab, runner_class)
    parts = []
    for plan, size in sized:
        progress.info(f"--measure both: the {'counting' if plan.measure == 'work' else 'timed'} A/B "
                      f"(its half of the budget, {plan.budget_minutes:g} min)")
        parts.append(run_sized(scenario, profile, sides, parent, case, plan, out_dir / plan.measure, progress,
                               runner_class, setup_sql, sized=size))
    work, timed = (p.verdict for p in parts)
    assert work is not None and timed is not None
    family = change_family(work, timed)
    report_file = out_dir / "both.md"
    verdict = both_verdict(work, timed, family, str(report_file))
    text = with_opening(both_markdown(verdict, [p.report for p in parts]), verdict)
    write_atomic(report_file, text)
    return BothAB(parts, text, verdict)
