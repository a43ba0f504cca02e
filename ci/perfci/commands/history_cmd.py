"""`perfci history append|exclude|export|changes`: the history of result summaries, and change points."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import click

from perfci.commands import options
from perfci.judge.changes import DEFAULT_PVALUE, detect, series
from perfci.model.identity import Follow, slug
from perfci.model.outputs import ChangeList, ChangePoint
from perfci.report.csv_tables import HISTORY_COLUMNS, history_rows, to_csv
from perfci.report.plots import history_plot
from perfci.store.history_files import Histories, append, case_files, exclude, read_history
from perfci.store.results import expand, load_result
from perfci.util.errors import BadInput
from perfci.util.files import write_atomic


@click.group()
def history() -> None:
    """The append-only history of result summaries, and change points in it."""


@history.command("append")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@options.history_to_write
@options.follow
def history_append(results: tuple[Path, ...], history_dir: Path, follow: Follow) -> None:
    """Append RESULT files' summaries (a result already there is skipped)."""
    loaded = [load_result(p) for p in expand(list(results))]
    for path, added in append(loaded, history_dir, follow):
        click.echo(f"{path}: +{added}")


@history.command("export")
@options.history_to_read
@click.option("--case", "case_pattern", default="*", show_default=True, metavar="GLOB",
              help="Only cases whose path under the history matches (runner class/server/scenario/profile/case).")
@click.option("--out", "out", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True), default=Path("-"),
              show_default=True, help="Where the CSV goes (-: stdout).")
def history_export(history_dir: Path, case_pattern: str, out: Path) -> None:
    """The history as CSV, one row per night and metric (long format: pivot it in a
    spreadsheet or pandas): case, result id, date, server version, scenario hash, measure,
    valid, excluded, metric, value, and whether that night regressed or stood on it."""
    histories = Histories(history_dir)
    rows = []
    for path in case_files(history_dir):
        case = str(path.relative_to(history_dir).with_suffix(""))
        if fnmatch.fnmatchcase(case, case_pattern):
            rows += list(history_rows(case, histories.case(path)))
    if not rows:
        raise BadInput(f"{history_dir}: no history file matches --case {case_pattern!r}")
    text = to_csv(HISTORY_COLUMNS, rows)
    if str(out) == "-":
        click.echo(text, nl=False)
    else:
        write_atomic(out, text)


@history.command("exclude")
@click.argument("result_id")
@click.option("--reason", required=True, help="Why (shown in every report that leaves it out).")
@options.history_to_read
def history_exclude(result_id: str, reason: str, history_dir: Path) -> None:
    """Exclude RESULT_ID's sample from baselines and change points (kept, marked, listed in reports)."""
    if not reason.strip():
        raise click.BadParameter("give a reason", param_hint="--reason")
    for path in exclude(history_dir, result_id, reason.strip()):
        click.echo(f"{path}: excluded {result_id}")


@history.command("changes")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--metric", "metrics", multiple=True, help="Only these metric keys (e.g. after.qps_write).")
@click.option("--pvalue", type=click.FloatRange(0.0001, 0.5), default=DEFAULT_PVALUE, show_default=True,
              help="E-Divisive's significance level for a change point.")
@click.option("--plots", "plots_dir", type=click.Path(path_type=Path), help="Write a PNG per metric with a change.")
@options.json_output("changes")
def history_changes(files: tuple[Path, ...], metrics: tuple[str, ...], pvalue: float, plots_dir: Path | None,
                    json_out: Path | None) -> None:
    """Change points (E-Divisive means) in history FILES (.jsonl) or directories of them."""
    say = options.text_out(json_out)
    paths = [q for p in files for q in (case_files(Path(p)) if Path(p).is_dir() else [Path(p)])]
    if not paths:  # "no change points" would read as a clean history
        raise BadInput(f"{', '.join(map(str, files))}: no history files (<runner class>/<server>/<scenario>/<profile>/"
                       "<case>.jsonl) under it")
    runs: dict[str, int] = {}
    points: list[ChangePoint] = []
    for path in paths:
        entries = read_history(path)
        runs[str(path)] = len(entries)
        found = detect(entries, list(metrics) or None, pvalue)
        say(f"## {path} ({len(entries)} runs)")
        if not found:
            say("no change points")
        for key, changes in found.items():
            for c in changes:
                points.append(ChangePoint(history_file=str(path), metric=key, change_pct=c.change_pct, index=c.index,
                                          result_id=c.result_id, date=c.date, server_version=c.server_version,
                                          before_mean=c.before_mean, after_mean=c.after_mean))
                pct = "–" if c.change_pct is None else f"{c.change_pct:+.1f} %"
                say(f"- `{key}`: {pct} at run {c.index} ({c.result_id}, {c.date[:10]}, "
                    f"server {c.server_version}): {c.before_mean:.4g} -> {c.after_mean:.4g}")
            if plots_dir:
                target = Path(plots_dir) / f"history-{slug(path.stem)}-{slug(key)}.png"
                history_plot(key, series(entries, key), [c.index for c in changes], target)
    options.emit_json(ChangeList(pvalue=pvalue, files=runs, changes=points).dump(), json_out)
