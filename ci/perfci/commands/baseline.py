"""`perfci baseline update`: add accepted results to their stored baselines."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.model.identity import Follow
from perfci.store.baseline import DEFAULT_WINDOW
from perfci.store.baseline import update as update_baselines
from perfci.store.results import expand, load_result


@click.group()
def baseline() -> None:
    """Create and extend stored baselines."""


@baseline.command("update")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@options.baseline_dir_to_write
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path),
              help="Write this baseline file instead of the one the layout names.")
@click.option("--window", type=click.IntRange(1, 1000), default=None,
              help=f"Keep the last N samples (default: the baseline's own, {DEFAULT_WINDOW} for a new one).")
@click.option("--force", is_flag=True, help="Accept results that would be refused; the reasons are recorded.")
@options.follow
def baseline_update(results: tuple[Path, ...], baseline_dir: Path | None, baseline_file: Path | None,
                    window: int | None, force: bool, follow: Follow) -> None:
    """Add accepted RESULT files (or directories) to their baselines.

    Refuses failed or partial runs and results of another scenario hash, profile,
    runner class or host kind (unless --force). Writes are atomic."""
    loaded = [(p, load_result(p)) for p in expand(list(results))]
    for path, added, kept in update_baselines(loaded, baseline_dir, baseline_file, window, force, follow):
        click.echo(f"{path}: +{added} sample(s), {kept} kept")
