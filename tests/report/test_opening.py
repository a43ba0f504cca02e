"""The four lines an A/B's report and its PR comment open with (#57): what, how sure, why,
reproduce, for every outcome, from the typed verdict alone."""

from __future__ import annotations

import shlex

import pytest

from perfci.model.ab_verdict import AbMetric, AbSide, AbVerdict, SideArgs
from perfci.model.verdicts import Outcome
from perfci.report.opening import LABELS, opening, with_opening


def verdict(outcome: Outcome, **changes) -> AbVerdict:
    metrics = {
        Outcome.REGRESSION: [AbMetric(key="full-scan.tps", judged=True, verdict=Outcome.REGRESSION, a=100, b=90.1,
                                      ratio=0.901, p_adjusted=0.0003),
                             AbMetric(key="full-scan.cpu_us_per_txn", judged=True, verdict=Outcome.REGRESSION, a=10,
                                      b=11.1, ratio=1.11, p_adjusted=0.002)],
        Outcome.INCONCLUSIVE: [AbMetric(key="p.tps", judged=True, verdict=Outcome.INCONCLUSIVE, a=100, b=98, ratio=0.98)],
        Outcome.UNCHANGED: [AbMetric(key="p.tps", judged=True, verdict=Outcome.UNCHANGED, a=100, b=100.2, ratio=1.002)],
        Outcome.IMPROVEMENT: [AbMetric(key="p.latency_ms_avg", judged=True, verdict=Outcome.IMPROVEMENT, a=2, b=1.5,
                                       ratio=0.75)],
    }[outcome]
    data = dict(outcome=outcome, verdict_line="**x**", mode="interleaved", scenario="microbench", profile="smoke",
                case="default", scenario_hash="sha256:x", runner_class="local", host="vm",
                a=AbSide(spec="mariadb-10.11", version="10.11.19", run=SideArgs(server="mariadb-10.11")),
                b=AbSide(spec="local a=1", version="10.11.19", run=SideArgs(server="local", config=["a=1"])),
                metrics=metrics, alpha=0.005, blind_below=None if outcome == Outcome.REGRESSION else 0.049)
    return AbVerdict(**{**data, **changes})


@pytest.mark.parametrize("outcome", [Outcome.REGRESSION, Outcome.INCONCLUSIVE, Outcome.UNCHANGED,
                                     Outcome.IMPROVEMENT])
def test_every_outcome_opens_with_what_how_sure_why_and_a_command_that_runs(outcome):
    lines = opening(verdict(outcome))
    assert [line.split("**")[1] for line in lines] == list(LABELS)
    command = lines[3].split("`")[1]
    assert shlex.split(command)[:3] == ["perfci", "ab", "microbench"] and "--b-config a=1" in command


def test_a_regression_says_what_moved_in_words_and_percent_and_how_sure_once():
    what, sure, why, _ = opening(verdict(Outcome.REGRESSION, why_line="`scan_row` +1,234 instructions per transaction"))
    assert what == "**What**: B is worse. full-scan: throughput −9.9 %, CPU per transaction +11.0 %."
    assert sure.startswith("**How sure**: very sure: p = 0.0003 after Holm over 2 judged metrics (flagged below 0.50%")
    assert why == "**Why**: `scan_row` +1,234 instructions per transaction"


def test_no_change_says_what_it_could_have_missed():
    what, sure, _, _ = opening(verdict(Outcome.UNCHANGED))
    assert what == "**What**: nothing changed beyond its tolerance in 1 judged metrics (it could have missed up to 4.9%)."
    assert sure.startswith("**How sure**: sure of no change")


def test_the_report_keeps_its_title_first_and_the_tables_after():
    text = with_opening("## perfci A/B (interleaved): microbench\n\n**Regression**: x\n\n| table |\n", verdict(Outcome.REGRESSION))
    lines = text.splitlines()
    assert lines[0] == "## perfci A/B (interleaved): microbench" and lines[1] == ""
    assert [line.split("**")[1] for line in lines[2:6]] == list(LABELS) and lines[7] == "**Regression**: x"


def test_a_rounds_regression_says_its_interval_not_a_p_it_does_not_have():
    m = AbMetric(key="only.latency_ms_p95", judged=True, verdict=Outcome.REGRESSION, a=1.78, b=1.97, ratio=1.109,
                 low=1.040, high=1.182, confidence=0.995)
    _, sure, _, _ = opening(verdict(Outcome.REGRESSION, mode="rounds", metrics=[m], alpha=None,
                                    sizing="3 paired rounds"))
    assert sure == ("**How sure**: flagged by its 99.5% interval [1.040, 1.182] of B/A, beyond its tolerance; "
                    "3 paired rounds, each metric at that level (no correction over metrics).")


@pytest.mark.parametrize("current_tps", [700.0, 1000.0], ids=["regression", "unchanged"])
def test_a_comparison_case_opens_with_the_four_lines_before_its_tables(tmp_path, current_tps):
    """compare's (and diff's) report: each case's first lines are the four, its tables after;
    queries/s and latency that repeat throughput's change are not said twice."""
    from perfci.judge.compare import compare_cases
    from perfci.report.markdown import comparison_markdown
    from perfci.store.baseline_files import update_baselines
    from perfci.store.case_inputs import load_cases

    from factories import make_result, write_results

    root = tmp_path / "b"
    update_baselines(write_results(tmp_path / "r", [make_result(tps=1000 + 7 * i) for i in range(5)]), root=root)
    comps = compare_cases(load_cases([make_result(tps=current_tps)], baseline_root=root))
    text = comparison_markdown(comps, 0.995).splitlines()
    case = text.index(next(line for line in text if line.startswith("### ")))
    four = text[case + 2:case + 6]
    assert [line.split("**")[1] for line in four] == list(LABELS)
    assert four[3].startswith("- **Reproduce**: `perfci run tiny")
    if current_tps < 1000:
        assert "before: throughput −31.0 %" in four[0] and "queries/s" not in four[0] and ", latency" not in four[0]
        assert "(against its baseline (5 samples))" in four[0] and "per metric, no correction" in four[1]
    else:
        assert "nothing worse beyond its tolerance" in four[0]
    assert text.index(next(line for line in text if line.startswith("| metric"))) > case + 6 or current_tps == 1000


def test_a_bisect_and_a_sweep_open_with_the_four_lines():
    """Every writer (#57): the bisect's and the sweep's reports say what, how sure, why
    and the command before their tables."""
    from perfci.judge.bisect import Bisection, Step
    from perfci.model.abratio import AbRatio
    from perfci.model.sweep import Sweep, SweepCell
    from perfci.report.opening import bisect_opening, sweep_opening
    from perfci.report.sweep_report import sweep_markdown

    found = Bisection(steps=[Step("8.0.12", "8.0.31", "regression", 0.9, 0.85, 0.95),
                             Step("8.0.12", "8.0.15", "regression", 0.74, 0.60, 0.90, mde=0.08)],
                      first_bad="8.0.15", last_good="8.0.12", ends_apart=True)
    lines = bisect_opening(found, "qps", 0.005, "perfci bisect microbench --good 8.0.12 --bad 8.0.31")
    assert [line.split("**")[1] for line in lines] == list(LABELS)
    assert lines[0] == "**What**: first slower in `8.0.15`: queries/s −26.0 % against `8.0.12`."
    assert "[0.600, 0.900]" in lines[1] and lines[3].endswith("`perfci bisect microbench --good 8.0.12 --bad 8.0.31`")
    undecided = bisect_opening(Bisection(steps=found.steps[:1], undecided_between=("a", "b")), "qps", 0.005, "c")
    assert undecided[1].startswith("**How sure**: not sure where")

    slow = AbRatio(a=100, b=90, ratio=0.9, low=0.85, high=0.95, confidence=0.995, mde=0.05, verdict="regression")
    sweep = Sweep(scenario="microbench", scenario_hash="sha256:x", profile="smoke", servers=["m-8.0.12", "m-8.0.31"],
                  runner_class="local", started_at="2026-11-29T00:00:00Z",
                  cells=[SweepCell(case="default", server="m-8.0.31", status="measured",
                                   ratios={"full-scan.qps": slow}, regressions=["full-scan.qps"])])
    opening = sweep_opening(sweep, 0.005, "perfci sweep microbench --servers m-8.0.12,m-8.0.31")
    assert opening[0] == "**What**: slower than the base `m-8.0.12`: `m-8.0.31` (full-scan: queries/s −10.0 %)."
    text = sweep_markdown(sweep, None, opening).splitlines()
    assert text[2].startswith("- **What**") and text[5].startswith("- **Reproduce**")


def test_an_explain_pass_that_found_nothing_says_what_it_saw_not_that_it_never_ran():
    """Seen on the real MariaDB PR check (2026-11-29): 4 profiled burst pairs saw +3.2 %
    server CPU where the A/B measured +14.9 %, nothing stood out; the opening said "no
    explain pass ran"."""
    from perfci.judge.profile_diff import PhaseFindings
    from perfci.sessions.sized_ab import sampled_why_line
    quiet = PhaseFindings("full-scan", {"a": 3890.0, "b": 4015.0}, {"a": 0.9, "b": 0.9}, [], [], [], 4)
    line = sampled_why_line([quiet])
    assert line == ("the explain pass (4 profiled burst pairs) saw +3.2% server CPU per transaction in full-scan; "
                    "no function stood out beyond those bursts' noise")
    assert sampled_why_line([PhaseFindings("full-scan", {}, {}, [], [], [], 0)]) is None  # nothing profiled
