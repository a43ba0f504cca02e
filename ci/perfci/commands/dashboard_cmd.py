"""`perfci dashboard HISTORY_DIR --out site/`: the static site of the nightly history."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.judge.budget import IssueBudget
from perfci.report import dashboard_site
from perfci.util.text import web_link


@click.command()
@click.argument("history_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=Path("site"), show_default=True,
              help="Directory the site is written to (index.html and a page per case).")
@click.option("--repo-url", default="", help="https://github.com/OWNER/NAME: case pages link to its regression issues.")
@click.option("--window", type=click.IntRange(2, 1000), default=10, show_default=True,
              help="How many of the newest usable nights make the baseline band drawn on each chart.")
@options.issue_budget
def dashboard(history_dir: Path, out_dir: Path, repo_url: str, window: int, budget: IssueBudget) -> None:
    """Write a static site (index + one page per case, metrics over the nights with change
    points and resets marked) from HISTORY_DIR; open OUT/index.html, or publish OUT. Change
    points are those the nightly calls: at their share of the same false-issue budget."""
    if repo_url and not web_link(repo_url):
        raise click.BadParameter(f"{repo_url!r}: expected an http(s) URL such as https://github.com/OWNER/NAME",
                                 param_hint="--repo-url")
    pages = dashboard_site.build(history_dir, out_dir, repo_url, window, budget.level("change"))
    click.echo(f"{pages[0]}: {len(pages) - 1} case page(s)")
