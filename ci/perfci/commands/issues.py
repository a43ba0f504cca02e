"""`perfci issues sync`: open, update or close regression issues on GitHub."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.alert import issues as issues_mod
from perfci.commands import options
from perfci.judge.compare import Rules
from perfci.judge.compare import compare as compare_results
from perfci.model.identity import Follow
from perfci.sessions.confirm import load_all
from perfci.store.results import expand, load_result


@click.group()
def issues() -> None:
    """Regression issues on GitHub (through gh)."""


@issues.command("sync")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@options.baseline_dir
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--run-url", default="", help="Link to the workflow run and its artifacts.")
@click.option("--close-after", type=click.IntRange(1, 100), default=issues_mod.DEFAULT_CLOSE_AFTER, show_default=True,
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
def issues_sync(results: tuple[Path, ...], baseline_dir: Path | None, repo: str | None, run_url: str,
                close_after: int, dry_run: bool, issues_out: Path, confirm_dir: Path | None, noise_dir: Path | None,
                follow: Follow, history_dir: Path | None, window: int, min_nights: int) -> None:
    """Open, update or close one issue per regressed metric of RESULTS."""
    dry_run_dir = options.dry_run_dir(dry_run, issues_out)
    loaded = [load_result(p) for p in expand(list(results))]
    comparisons = compare_results(loaded, baseline_root=baseline_dir, rules=Rules(follow=follow, noise_dir=noise_dir),
                                  history_root=history_dir, window=window)
    confirmations = load_all(confirm_dir) if confirm_dir else None
    for line in issues_mod.sync(comparisons, run_url, repo, dry_run_dir, close_after, confirmations,
                                history_dir, min_nights if history_dir else 1):
        click.echo(line)
