"""`perfci issues sync`: open, update or close regression issues on GitHub."""

from __future__ import annotations

import os
from pathlib import Path

import click

from perfci.alert import pr_comment, regression_issues
from perfci.alert.github import GitHub
from perfci.alert.nightly import at_the_nights_scale
from perfci.commands import options
from perfci.judge.budget import IssueBudget
from perfci.judge.compare import Rules, compare_cases
from perfci.model.identity import Follow
from perfci.store.case_inputs import load_cases
from perfci.store.confirmation_files import load_all
from perfci.store.results import expand, load_result


@click.group()
def issues() -> None:
    """Regression issues on GitHub (through gh)."""


@issues.command("sync")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@options.baseline_dir
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--run-url", default="", help="Link to the workflow run and its artifacts.")
@click.option("--close-after", type=click.IntRange(1, 100), default=regression_issues.DEFAULT_CLOSE_AFTER, show_default=True,
              help="Close an issue after this many consecutive clean runs.")
@options.dry_run
@options.issues_out
@click.option("--confirmations", "confirm_dir", type=click.Path(path_type=Path), default=None,
              help="Results of `perfci confirm`: a regression its A/B did not confirm opens no issue; "
                   "the others carry the A/B.")
@options.noise_dir
@options.follow
@options.history
@options.window
@options.min_nights
@options.issue_budget
def issues_sync(results: tuple[Path, ...], baseline_dir: Path | None, repo: str | None, run_url: str,
                close_after: int, dry_run: bool, issues_out: Path, confirm_dir: Path | None, noise_dir: Path | None,
                follow: Follow, history_dir: Path | None, window: int, min_nights: int, budget: IssueBudget) -> None:
    """Open, update or close one issue per regressed case of RESULTS (its regressed metrics in one table)."""
    dry_run_dir = options.dry_run_dir(dry_run, issues_out)
    loaded = [load_result(p) for p in expand(list(results))]
    comparisons = compare_cases(load_cases(loaded, baseline_root=baseline_dir, follow=follow, noise_dir=noise_dir,
                                     history_root=history_dir, window=window), Rules(follow=follow, noise_dir=noise_dir))
    confirmations = at_the_nights_scale(load_all(confirm_dir), loaded) if confirm_dir else None
    for line in regression_issues.sync(comparisons, run_url, repo, dry_run_dir, close_after, confirmations,
                                history_dir, min_nights if history_dir else 1, budget=budget):
        click.echo(line)


@issues.command("pr-comment")
@click.argument("reports", nargs=-1, type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--pr", "number", type=click.IntRange(1), required=True, help="The pull request's number.")
@click.option("--head-sha", required=True,
              help="The commit the A/B measured (the workflow run's head_sha): the PR's head must still be it.")
@click.option("--accepted", is_flag=True,
              help="With --dry-run: show a regression as accepted (otherwise the PR's perf-expected label says).")
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--run-url", default="", help="Link to the PR check's run.")
@click.option("--dry-run", is_flag=True, help="Call no GitHub API: print the comment instead.")
def issues_pr_comment(reports: tuple[Path, ...], number: int, head_sha: str, accepted: bool, repo: str | None,
                      run_url: str, dry_run: bool) -> None:
    """Write or edit the one perfci comment of pull request --pr from the PR check's A/B
    REPORTS (ab-*.md; the verdict from the ab-*.json beside one, when perfci ab --json wrote it): a verdict
    line first, each A/B's verdict, the full reports folded.

    \b
    Exit codes: 0 written, 2 bad input (also: the PR's head moved on), 3 GitHub API failure."""
    loaded = pr_comment.load_reports(list(reports))
    if dry_run:
        click.echo(pr_comment.body(loaded, head_sha, accepted, run_url))
        return
    gh = GitHub(repo or os.environ.get("GITHUB_REPOSITORY", ""), run_url)
    click.echo(pr_comment.post(gh, number, head_sha, loaded, run_url))
