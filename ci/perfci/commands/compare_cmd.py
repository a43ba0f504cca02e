"""`perfci compare`: judge results against stored baselines."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.judge.compare import Rules, compare_cases
from perfci.model.identity import Follow
from perfci.report.markdown import comparison_markdown
from perfci.report.plots import interval_plot
from perfci.store.case_inputs import load_cases
from perfci.store.results import expand, load_result
from perfci.util.errors import EXIT_INFRA, EXIT_REGRESSION


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path),
              help="A baseline file to compare with (default: the one for each result under --baseline-dir).")
@options.baseline_dir
@options.verdict_rules
@options.report
@options.csv_out
@options.json_output("comparison")
@options.noise_dir
@options.history
@options.window
@click.option("--plots", "plots_dir", type=click.Path(path_type=Path),
              help="Write PNG plots (per-interval throughput current vs baseline) to this directory.")
def compare(results: tuple[Path, ...], baseline_file: Path | None, baseline_dir: Path | None, confidence: float,
            cv_floor: float, prior_cv: float, follow: Follow, report_file: Path | None, csv_out: Path | None,
            json_out: Path | None,
            noise_dir: Path | None, history_dir: Path | None, window: int, plots_dir: Path | None) -> int:
    """Judge RESULT files (or directories of them) against stored baselines.

    \b
    Per metric: regression, improvement, unchanged, inconclusive or no-baseline,
    with the change, a confidence interval for current/baseline and the tolerance.
    Exit codes: 0 no regression, 1 regression found, 2 bad input, 3 infrastructure or internal error
    (also: the only results of a case were invalid runs, see the validity gate)."""
    rules = Rules(confidence=confidence, cv_floor=cv_floor, prior_cv=prior_cv, follow=follow, noise_dir=noise_dir)
    loaded = [load_result(p) for p in expand(list(results))]
    comparisons = compare_cases(load_cases(loaded, baseline_file, baseline_dir, follow, noise_dir, history_dir, window), rules)
    plots = None
    if plots_dir:
        plots = [[str(interval_plot(c, plots_dir))] if c.baseline and not c.skipped else [] for c in comparisons]
    text = comparison_markdown(comparisons, confidence, plots)
    options.emit_comparison(comparisons, rules, text, report_file, csv_out, json_out)
    if any(c.regressions for c in comparisons):
        return EXIT_REGRESSION
    if any(c.invalid for c in comparisons):
        click.echo("invalid runs only: nothing could be judged (see the warnings above)", err=True)
        return EXIT_INFRA
    return 0
