"""`perfci pr-check scenarios|server-code|baselines`: a pull request's perf check, the one
command each PR workflow step calls (sessions/pr_check.py)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from perfci.alert import pr_comment
from perfci.alert.github import GitHub
from perfci.commands import options
from perfci.model.flavor import FLAVORS
from perfci.sessions import pr_check
from perfci.sessions.session import handle_cancellation
from perfci.util.errors import BadInput

F = TypeVar("F", bound=Callable[..., Any])
NAME = re.compile(r"[A-Za-z0-9._/-]+")
PHASE = re.compile(r"[A-Za-z0-9._-]+")

PR_OPTIONS = (
    click.option("--base", "base_sha", required=True, metavar="SHA", help="The pull request's base commit."),
    click.option("--pr-number", type=click.IntRange(1), default=None,
                 help="The pull request's number, for the comment workflow (pr-report/pr-number)."),
    click.option("--perf-expected", type=click.BOOL, default=False, show_default=True, metavar="BOOL",
                 help="The PR carries the perf-expected label: a regression is reported, the check passes."),
    click.option("--report-dir", type=click.Path(path_type=Path), default=Path("pr-report"), show_default=True,
                 help="Where each A/B's report and typed verdict (ab-NAME.md, ab-NAME.json) go: what the comment "
                      "workflow reads."),
    options.out_dir,
)


def common(fn: F) -> F:
    """The options both kinds of check take, in one place."""
    for option in reversed(PR_OPTIONS):
        fn = option(fn)
    return fn


@click.group(name="pr-check")
def pr_check_group() -> None:
    """A pull request's perf check: what it changed, A/B'd base (A) against head (B) at the
    smoke profile, its reports for the PR comment, and the check's verdict.

    \b
    Exit codes: 0 nothing regressed (or accepted by --perf-expected true), 1 a regression,
    2 bad input, 3 a build, an A/B or the host failed; an A/B's own 2 or 3 ends the check."""


@pr_check_group.command()
@common
@click.option("--server-scenarios", envvar="PERFCI_PR_SERVER_SCENARIOS", default="", show_default=False,
              help="A changed servers.yaml id is A/B'd on these scenarios, comma-separated "
                   f"(default: the project's first {pr_check.PR_SCENARIOS} by name).")
@click.option("--perfci-itself", is_flag=True,
              help="The project is perfci's own repository: a change of ci/, scripts/ or the lock is A/B'd as "
                   "base perfci against head perfci (the harness check).")
@click.option("--harness-scenario", envvar="PERFCI_PR_HARNESS_SCENARIO", default="rebuild-after-delete",
              show_default=True, help="--perfci-itself: the scenario of the harness check.")
@click.option("--harness-server", envvar="PERFCI_PR_HARNESS_SERVER", default="local", show_default=True,
              help="--perfci-itself: the server of the harness check.")
@click.option("--harness-rounds", type=click.IntRange(2, 20), default=pr_check.HARNESS_ROUNDS, show_default=True,
              help="--perfci-itself: rounds of the harness check (2 compare the work only; 3 or more judge "
                   "throughput too).")
def scenarios(base_sha: str, pr_number: int | None, perf_expected: bool, report_dir: Path, out_dir: Path,
              server_scenarios: str, perfci_itself: bool, harness_scenario: str, harness_server: str,
              harness_rounds: int) -> int:
    """The PR check of a perfci project (perfci-pr.yml), run in its checkout with the base
    commit fetched: each changed scenario (its base version against its head version), each
    changed servers.yaml id (its base spec against its head spec), with --perfci-itself a
    change of perfci (harness check), and an edit of baselines/ (the thresholds it moves).

    \b
    Example:
      perfci pr-check scenarios --base "$BASE_SHA" --pr-number 7 --perf-expected false"""
    handle_cancellation()
    base = pr_check.require_sha(base_sha, "--base")
    checkout = Path.cwd()
    names = [s for s in server_scenarios.split(",") if s]
    for name in names:
        _check_name(name, "--server-scenarios")
    with pr_check.check_run(report_dir, out_dir) as run, tempfile.TemporaryDirectory(prefix="perfci-pr-") as tmp:
        unchanged: list[str] = []
        planned = [*pr_check.scenario_abs(base, checkout, Path(tmp), unchanged),
                   *pr_check.server_abs(base, checkout, Path(tmp), names, run)]
        for name in unchanged:
            pr_check.unchanged_report(name, run.report(Path(name).stem))
            run.say(run.report(Path(name).stem).read_text(encoding="utf-8"))
        code = pr_check.run_abs(planned, run, checkout, pr_check.child_env())
        if code == 0 and perfci_itself and pr_check.touches_perfci(base, checkout):
            code = pr_check.harness_ab(base, checkout, run, harness_scenario, harness_server, harness_rounds)
        if code != 0:
            return code
        pr_check.baselines_diff(base, checkout, run.report("baselines"))
        if not planned:
            click.echo("no scenario or server changed what it measures: nothing to A/B", err=True)
        return pr_check.conclude(run, pr_number, perf_expected)


@pr_check_group.command(name="server-code")
@common
@click.option("--flavor", type=click.Choice(FLAVORS), required=True, help="The server repository's flavor.")
@click.option("--head", "head_sha", required=True, metavar="SHA", help="The pull request's head commit.")
@click.option("--mirror", type=click.Path(path_type=Path, exists=True, file_okay=False), required=True,
              help="The runner's mirror holding both commits (`perfci pr-fetch`).")
@click.option("--scenarios", "scenario_list", required=True, metavar="'NAME ...'",
              help="Scenarios to A/B, space-separated: names perfci ships or paths in the checkout.")
@click.option("--phases", "phase_list", default="", metavar="'PHASE ...'",
              help="Only these phases, space-separated (empty: every phase).")
@click.option("--fork", is_flag=True, help="The PR comes from a fork: refused unless root allowed fork builds here, "
                                           "and refused when it moves .gitmodules or a gitlink off its upstream.")
def server_code(base_sha: str, pr_number: int | None, perf_expected: bool, report_dir: Path, out_dir: Path,
                flavor: str, head_sha: str, mirror: Path, scenario_list: str, phase_list: str, fork: bool) -> int:
    """The PR check of a server repository (perfci-server-pr.yml): the base and head
    commits built from MIRROR in the sandbox (PERFCI_SANDBOX_USER; scripts/build-server,
    the job's caches), then A/B'd on each scenario (interleaved where its phases are fixed
    work, else rounds; PERFCI_MEASURE says what is judged).

    \b
    Example:
      perfci pr-check server-code --flavor mariadb --base "$BASE_SHA" --head "$HEAD_SHA" \\
        --mirror "$PERFCI_SERVER_MIRROR" --scenarios "perf/hot.yaml microbench" --phases full-scan"""
    handle_cancellation()
    base = pr_check.require_sha(base_sha, "--base")
    head = pr_check.require_sha(head_sha, "--head")
    names = scenario_list.split()
    if not names:
        raise BadInput("--scenarios: name at least one (the workflow's scenarios input)")
    for name in names:
        _check_name(name, "--scenarios")
    phases = phase_list.split()
    for phase in phases:
        if not PHASE.fullmatch(phase):
            raise BadInput(f"--phases: phase {phase!r}: letters, digits, '.', '_', '-'")
    pr_check.require_sandbox_account()  # first: nothing of the PR's runs without it
    if fork:
        refusal = pr_check.fork_refusal()
        with tempfile.TemporaryDirectory(prefix="perfci-upstream-") as tmp:
            refusal = refusal or pr_check.submodule_refusal(mirror, base, head, pr_check.UpstreamCheck(Path(tmp)))
        if refusal:
            raise BadInput(f"refused: {refusal}")
    checkout = Path.cwd()
    with pr_check.job_scratch() as scratch, pr_check.check_run(report_dir, out_dir) as run:
        env = pr_check.pr_build_env(mirror, base, scratch)
        code = pr_check.build_both(flavor, (base, head), env)
        if code == 0:
            code = pr_check.run_abs(pr_check.server_code_abs(flavor, base, head, names, phases, checkout), run,
                                    checkout, env)
        return code or pr_check.conclude(run, pr_number, perf_expected)


@pr_check_group.command()
@click.option("--base", "base_sha", required=True, metavar="SHA", help="The pull request's base commit (fetched).")
@options.report
def baselines(base_sha: str, report_file: Path | None) -> int:
    """What a PR's edit of baselines/ does to the verdicts: the base commit's baselines/
    against the checkout's (every head file loaded: a broken one is exit 2, named); per
    changed case the value one run must cross to be flagged, before -> after. Writes the
    report and its verdict (REPORT with .json) only when baselines/ changed."""
    report = report_file or Path("baselines-diff.md")
    if pr_check.baselines_diff(pr_check.require_sha(base_sha, "--base"), Path.cwd(), report):
        click.echo(report.read_text(encoding="utf-8"))
    return 0


@pr_check_group.command()
@click.option("--pr-number", type=click.IntRange(1), required=True, help="The pull request's number.")
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--github-output", type=click.Path(path_type=Path, dir_okay=False), envvar="GITHUB_OUTPUT",
              default=None, help="Append perf-expected=true|false here (default: $GITHUB_OUTPUT, when set).")
def accepted(pr_number: int, repo: str | None, github_output: Path | None) -> int:
    """Does the PR carry the perf-expected label, added by someone with write access?
    Asked of GitHub (the PR's labels now, who added the label, that user's permission),
    never of the event: triage access may add labels, and only write access accepts a
    regression. Its own job, before the measuring job and with no PR code in it: the
    measuring job gets only the answer (--perf-expected).

    \b
    Exit codes: 0 answered (true or false), 3 GitHub API failure."""
    answer = pr_comment.acceptance(GitHub(repo or os.environ.get("GITHUB_REPOSITORY", "")), pr_number)
    click.echo(f"perfci: {answer.why}")
    if github_output:
        with github_output.open("a", encoding="utf-8") as out:
            out.write(f"perf-expected={str(answer.accepted).lower()}\n")
    else:
        click.echo(f"perf-expected={str(answer.accepted).lower()}")
    return 0


def _check_name(name: str, option: str) -> None:
    if not NAME.fullmatch(name) or name.startswith("/") or ".." in name.split("/"):
        raise BadInput(f"{option}: {name!r}: a scenario name or a relative path inside the checkout")
