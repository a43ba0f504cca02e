"""`perfci baseline update` (add accepted results to their stored baselines) and `perfci baseline diff`."""

from __future__ import annotations

import re
from pathlib import Path

import click

from perfci.commands import options
from perfci.judge import thresholds
from perfci.model.baseline import DEFAULT_WINDOW
from perfci.model.identity import Follow
from perfci.model.outputs import CheckVerdict
from perfci.model.verdicts import Outcome
from perfci.report.thresholds_report import diff_markdown
from perfci.store.baseline_files import read_tree, update_baselines
from perfci.store.results import expand, load_result
from perfci.util.files import write_atomic
from perfci.util.paths import project_root

# `runner-class: NAME` as a caller's `with:` passes it (not an input's definition, not an expression)
RUNNER_CLASS_LINE = re.compile(r"""^[ \t]*runner-class:[ \t]*['"]?([A-Za-z0-9][A-Za-z0-9._-]*)['"]?[ \t]*(?:#.*)?$""",
                               re.MULTILINE)


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
    classes = sorted({r.runner_class for _, r in loaded})
    workflows = workflow_runner_classes(project_root())
    if elsewhere := [c for c in classes if workflows and c not in workflows]:
        used = ", ".join(f"{c!r} ({', '.join(sorted(files))})" for c, files in sorted(workflows.items()))
        click.echo(f"warning: these samples are of runner class {', '.join(map(repr, elsewhere))}; this project's "
                   f"workflows run {used}: a baseline counts only on the class it was measured on, so they never "
                   "read it. Measure on that kind of host with --runner-class (or PERFCI_RUNNER_CLASS), or let the "
                   "nightly's history be the baseline.", err=True)


def workflow_runner_classes(root: Path | None) -> dict[str, set[str]]:
    """The runner classes this project's workflows pass to perfci's (`runner-class: X`), with
    the files that name each; empty outside a project or without workflows."""
    found: dict[str, set[str]] = {}
    flows = root / ".github" / "workflows" if root else None
    for flow in sorted(flows.glob("*.y*ml")) if flows and flows.is_dir() else []:
        for value in RUNNER_CLASS_LINE.findall(flow.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(value, set()).add(flow.name)
    return found


@baseline.command("diff")
@click.argument("base", type=click.Path(path_type=Path, file_okay=False))
@click.argument("head", type=click.Path(path_type=Path, file_okay=False))
@options.report
@options.json_output("check-verdict")
def baseline_diff(base: Path, head: Path, report_file: Path | None, json_out: Path | None) -> None:
    """What an edit of baselines/ does to the verdicts: BASE and HEAD are two baselines/
    trees (a PR's base and head). Every head file is validated; for each pinned
    baseline whose samples or noise model changed, per judged metric the value one
    run must cross to be judged a regression, before and after; for each changed
    noise model, its tolerances and the smallest effects a night and an A/B can see.

    \b
    Example (what the PR check runs):
      git archive "$BASE_SHA" baselines | tar -x -C base
      perfci baseline diff base/baselines baselines --report ab-baselines.md
    Exit codes: 0 shown, 2 a file that does not load (named), 3 internal error."""
    diff = thresholds.diff(read_tree(base), read_tree(head))
    text = diff_markdown(diff)
    if report_file is not None:
        write_atomic(report_file, text)
    options.emit_json(CheckVerdict(check="baselines", outcome=Outcome.UNCHANGED if diff.empty else Outcome.MOVED,
                                   verdict_line=text.splitlines()[0]).dump(), json_out)
    if json_out is None or str(json_out) != "-":
        click.echo(text, nl=False)
