"""`perfci plan nightly`: what the nightly costs, the runners a window needs and the
budget's cases per runner, from the scenarios' expected minutes and servers.yaml."""

from __future__ import annotations

import json

import pytest

from perfci.model.outputs import NightPlan, PlanRow

from conftest import run_perfci


def rows(*minutes_and_cases: tuple[float, int]) -> list[PlanRow]:
    return [PlanRow(server=f"s{i}", scenario="x", cases=c, minutes=m) for i, (m, c) in enumerate(minutes_and_cases)]


def test_jobs_are_spread_evenly_onto_the_fewest_runners_that_fit_the_window():
    night = NightPlan.of("nightly", rows((60, 12), (60, 12), (40, 12), (40, 12), (30, 1), (30, 1)), 2.0, 25)
    assert len(night.runners) == 3  # 260 min of jobs, 95 min usable a runner
    loads = [sum(night.rows[i].minutes for i in jobs) for jobs in night.runners]
    assert max(loads) <= 95 and sorted(i for jobs in night.runners for i in jobs) == list(range(6))
    assert night.cases_per_runner == max(sum(night.rows[i].cases for i in jobs) for jobs in night.runners)


def test_indivisible_jobs_need_more_runners_than_the_minutes_alone_say():
    night = NightPlan.of("nightly", rows((60, 1), (60, 1), (60, 1)), 100 / 60, 0)  # 180 min, 100 a runner
    assert len(night.runners) == 3 and not night.too_long  # two jobs never share a 100-minute night


def test_a_job_longer_than_the_night_is_named():
    night = NightPlan.of("nightly", rows((600, 1), (5, 1)), 8, 25)
    assert night.too_long == [0] and [night.rows[i].minutes for jobs in night.runners for i in jobs] == [5]


@pytest.mark.slow  # several CLI starts
def test_the_command_plans_the_projects_nightly(tmp_path):
    out = tmp_path / "plan.json"
    proc = run_perfci("plan", "nightly", "--servers", "mariadb-10.11,mysql-8.0.31",
                      "--scenarios", "microbench,rebuild-after-delete", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(run_perfci("list", "--json").stdout)
    minutes = {s["name"]: next(p["expected_minutes"] for p in s["profiles"] if p["name"] == "nightly")
               for s in listed["scenarios"]}
    plan = json.loads(out.read_text())
    assert plan["schema"] == "perfci.plan/1" and len(plan["rows"]) == 4
    assert plan["total_minutes"] == 2 * (minutes["microbench"] + minutes["rebuild-after-delete"])
    assert "PERFCI_CASES=" in proc.stdout and "Runners for a 8 h window" in proc.stdout


@pytest.mark.slow  # several CLI starts
def test_a_night_too_short_or_an_unknown_server_is_exit_2_in_one_line():
    short = run_perfci("plan", "nightly", "--scenarios", "rebuild-after-delete", "--window-hours", "0.5")
    assert short.returncode == 2 and short.stderr.count("\n") == 1 and "--window-hours" in short.stderr
    unknown = run_perfci("plan", "nightly", "--servers", "nope")
    assert unknown.returncode == 2 and "unknown server id" in unknown.stderr
