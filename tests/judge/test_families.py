"""`perfci ab --measure both`: the two A/Bs it runs (sessions/both_ab.py), where a change
shows from the counting A/B's verdict and the timed A/B's (judge/families.py), and the
one verdict the two make (report/both.py)."""

from __future__ import annotations

import pytest

from perfci.judge.families import change_family, phase_family
from perfci.judge.paired import ALPHA
from perfci.model.ab_verdict import AbMetric, AbSide, AbVerdict
from perfci.model.verdicts import Outcome
from perfci.report.both import both_markdown, both_verdict
from perfci.sessions.both_ab import part_plans
from perfci.sessions.sized_ab import AbPlan

R, U, N, B = Outcome.REGRESSION, Outcome.UNCHANGED, Outcome.INCONCLUSIVE, Outcome.IMPROVEMENT


def verdict(metrics: dict[str, Outcome], sizing: str = "1 instance pair", why: str | None = None) -> AbVerdict:
    rows = [AbMetric(key=k, judged=True, verdict=v, a=1.0, b=1.0, mde=0.01) for k, v in metrics.items()]
    rows.append(AbMetric(key="scan.pages_read_per_txn", judged=False, verdict=Outcome.MOVED, a=1.0, b=2.0))
    return AbVerdict(outcome=R if R in metrics.values() else U, verdict_line="line", mode="interleaved",
                     scenario="microbench", profile="smoke", case="default", scenario_hash="sha256:x",
                     runner_class="local", host="h", a=AbSide(spec="local", version="10.11.19"),
                     b=AbSide(spec="local", version="10.11.19"), sizing=sizing, metrics=rows, why=why)


@pytest.mark.parametrize("work, time, kind", [
    (R, [U], "more-code"),             # more code, whatever time saw
    (R, [R], "more-code"),
    (B, [U], "less-code"),
    (U, [R, U], "same-work-slower"),   # time worse, the count decided unchanged
    (U, [B], "same-work-faster"),
    (N, [R], "undecided"),             # time worse, the count could not say
    (None, [R], "undecided"),          # the phase was not counted
    (N, [U], "undecided"),             # an A/A too short to decide the count: no family
    (U, [U, N], "no-change"),
])
def test_a_phase_family_follows_the_count_first_and_time_only_where_the_count_held(work, time, kind):
    assert phase_family(work, time) == kind


def test_the_ab_family_is_the_worst_news_of_any_phase_with_the_phases_named():
    work = verdict({"scan.instructions_per_txn": U, "point.instructions_per_txn": U, "write.instructions_per_txn": R})
    timed = verdict({"scan.tps": R, "scan.latency_ms_avg": R, "point.tps": U, "write.tps": U})
    family = change_family(work, timed)
    assert (family.kind, family.phases) == ("more-code", ["write"])
    assert family.line.startswith("more code ran for the same statements")
    family = change_family(verdict({"scan.instructions_per_txn": U, "point.instructions_per_txn": U}), timed)
    assert (family.kind, family.phases) == ("same-work-slower", ["scan"])
    assert "not more code" in family.line
    assert change_family(verdict({}), verdict({})).kind == "no-change"  # nothing judged: nothing to name


def test_the_verdict_of_both_judges_every_judged_metric_once_and_keeps_both_parts():
    work = verdict({"scan.instructions_per_txn": U}, sizing="work size", why="where the instructions went")
    timed = verdict({"scan.tps": R, "scan.instructions_per_txn": U}, sizing="time size", why="the profiles")
    family = change_family(work, timed)
    both = both_verdict(work, timed, family, "out/both.md")
    assert both.outcome == R and both.regressions == ["scan.tps"]
    assert [m.key for m in both.metrics] == ["scan.instructions_per_txn", "scan.tps"]  # judged, once each
    assert both.parts == [work, timed] and both.family == family and both.report_file == "out/both.md"
    assert both.why == "the profiles"  # the same work took longer: the timed A/B's Why, never the count's
    assert both.sizing == "work: work size; time: time size"
    assert both.verdict_line.startswith("**Regression**: the same work took longer in `scan`")
    assert AbVerdict.model_validate(both.dump()) == both  # the JSON reads back as it was written
    text = both_markdown(both, ["## perfci A/B (interleaved): work\n\n### Why", "## time"])
    assert text.splitlines()[2] == both.verdict_line
    assert "### perfci A/B (interleaved): work" in text and "#### Why" in text and "\n### time" in text


def test_both_runs_the_count_then_time_each_in_half_the_budget_and_half_the_level():
    work, timed = part_plans(AbPlan(target=0.05, budget_minutes=12, measure="both", work_counter="callgrind"))
    assert (work.measure, timed.measure) == ("work", "time")
    assert work.budget_minutes == timed.budget_minutes == 6
    assert work.alpha == timed.alpha == ALPHA / 2  # either flagging falsely stays within the A/B's level
    assert (work.target, timed.target) == (0.01, 0.05)  # the count aims at the 1 % steps of code
    assert part_plans(AbPlan(target=0.004, measure="both", alpha=0.002))[0].target == 0.004
    assert part_plans(AbPlan(target=0.004, measure="both", alpha=0.002))[1].alpha == 0.001
