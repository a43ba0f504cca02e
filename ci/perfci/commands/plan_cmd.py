"""`perfci plan nightly`: what the project's nightly costs, before it runs."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.commands.servers_cmd import job_scenarios, job_servers, nightly_jobs
from perfci.judge import design
from perfci.model.outputs import NightPlan, PlanRow
from perfci.model.scenario import cases, load_scenario
from perfci.util.errors import BadInput


@click.group()
def plan() -> None:
    """What a run of perfci costs, before it runs."""


@plan.command()
@job_servers
@job_scenarios
@click.option("--profile", "-p", default="nightly", show_default=True, help="The profile the nightly runs.")
@click.option("--window-hours", type=click.FloatRange(0.5, 24), default=8.0, show_default=True,
              help="The night window every runner's jobs must fit in.")
@click.option("--confirm-minutes", type=click.FloatRange(0), default=design.DEFAULT_BUDGET_MINUTES, show_default=True,
              help="Room kept on each runner for one reference A/B (a night that flags a regression confirms it).")
@options.json_output("plan")
def nightly(server_ids: str, scenarios: str, profile: str, window_hours: float, confirm_minutes: float,
            json_out: Path | None) -> int:
    """Minutes per server and scenario (one bench job each, every case of the profile: its
    expected_minutes on a 2-core runner), the runners a night window needs (jobs packed
    longest first, each runner keeping room for one reference A/B), and the false-issue
    budget's --cases for each runner (PERFCI_CASES). Exit 2 when a job cannot fit a night."""
    servers, names = nightly_jobs(server_ids, scenarios)
    rows = []
    for name in names:
        scenario, path = load_scenario(name)
        if profile not in scenario.profiles:
            raise BadInput(f"{path}: no profile {profile!r} (it has {', '.join(scenario.profiles)})")
        n = len(cases(scenario, profile, str(path)))
        rows += [PlanRow(server=s.id, scenario=name, cases=n, minutes=scenario.profiles[profile].expected_minutes)
                 for s in servers]
    night = NightPlan.of(profile, rows, window_hours, confirm_minutes)
    say = options.text_out(json_out)
    for line in plan_lines(night):
        say(line)
    options.emit_json(night.dump(), json_out)
    if night.too_long:
        raise BadInput(f"{len(night.too_long)} job(s) take longer than a {window_hours:g} h night less "
                       f"{confirm_minutes:g} min for an A/B: a longer --window-hours, or split the scenario")
    return 0


def plan_lines(night: NightPlan) -> list[str]:
    width = max((len(f"{r.server} · {r.scenario}") for r in night.rows), default=10)
    lines = [f"{'job (server · scenario)':<{width}}  cases  minutes"]
    lines += [f"{f'{r.server} · {r.scenario}':<{width}}  {r.cases:>5}  {r.minutes:>7g}" for r in night.rows]
    hours = night.total_minutes / 60
    lines += ["", f"{len(night.rows)} jobs, {night.total_cases} cases, {night.total_minutes:g} minutes "
                  f"({hours:.1f} h of runner time) a night at profile {night.profile}."]
    if night.runners:
        lines.append(f"Runners for a {night.window_hours:g} h window, each keeping {night.confirm_minutes:g} min for a "
                     f"reference A/B: {len(night.runners)}.")
        for i, jobs in enumerate(night.runners, 1):
            minutes = sum(night.rows[j].minutes for j in jobs)
            lines.append(f"  runner {i}: {minutes:g} min, {sum(night.rows[j].cases for j in jobs)} cases: "
                         + ", ".join(f"{night.rows[j].server} · {night.rows[j].scenario}" for j in jobs))
        lines.append(f"False-issue budget: set PERFCI_CASES={night.cases_per_runner} on each runner (the most cases "
                     "one runs a night), so that each case's level is its share of the runner's budget.")
    lines.append("Not counted: a counted run's time (--work-counter: its bursts run 22-200x slower under callgrind; "
                 "docs/work.md), datasets built rather than restored, and servers fetched or built on the night.")
    return lines
