"""The `perfci` command line."""

from __future__ import annotations

import signal
import sys
import tempfile
import uuid
from pathlib import Path

import click

from . import __version__
from . import history as history_mod
from . import issues as issues_mod
from .issues import DEFAULT_CLOSE_AFTER
from .ab import Side, ab_markdown, judge_pairs, run_ab
from .baseline import DEFAULT_ROOT, DEFAULT_WINDOW, slug
from .baseline import update as update_baselines
from .compare import compare as compare_results
from .errors import EXIT_BAD_INPUT, EXIT_REGRESSION, PerfciError
from .files import write_atomic, write_json_atomic
from .mycnf import parse_config_file, parse_override
from .progress import Progress
from .report import comparison_markdown, matrix_markdown, summary_markdown
from .results import expand, load_result
from .runner import execute, plan_run, plan_runs
from .scenario import all_scenario_files, cases, load_scenario, resolve
from .snapshots import SnapshotCache
from .stats import DEFAULT_CONFIDENCE, DEFAULT_CV_FLOOR, DEFAULT_PRIOR_CV

RUN_EPILOG = """\b
Examples:
  perfci run rebuild-after-delete --profile smoke
  perfci run rebuild-after-delete --profile nightly --server local:/opt/mysql-8.0.42 --repeat 3
  perfci run rebuild-after-delete --config innodb_flush_log_at_trx_commit=1 --config-file extra.cnf
  perfci run change-buffer-matrix --profile nightly --case 'cx_full/*'
  perfci run rebuild-after-delete --server docker:percona/percona-server:8.0.36
  PERFCI_DSN_PASSWORD=... perfci run rebuild-after-delete --server dsn:mysql://bench@db1:3306

\b
Each run (one per matrix case) starts a throwaway server in a fresh datadir
(under --workdir) or restores the dataset from the snapshot cache, runs the
scenario's steps, shuts the server down and writes one result file (JSON) and
its Markdown summary to --out; a matrix run adds <scenario>-<profile>-matrix.md
and plots. A case the server cannot run is a `skipped` result with the reason.
Nothing is written for a failed run.
Exit codes: 0 ok, 2 bad input, 3 infrastructure failure (server, sysbench).
"""


def _fail(err: PerfciError) -> None:
    click.echo(f"error: {err}", err=True)
    if err.detail:
        click.echo("\n".join("  | " + line for line in err.detail.splitlines()), err=True)
    sys.exit(err.exit_code)


def _terminate_as_interrupt(signum, frame):  # SIGTERM from CI cancels: clean up as for Ctrl-C
    raise KeyboardInterrupt


def _handle_cancellation() -> None:
    """Ctrl-C and SIGTERM both end in an orderly server shutdown. SIGINT is set
    explicitly: a process started in the background inherits it ignored, and a CI
    runner cancelling a job sends it."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="perfci")
def cli():
    """Performance-regression CI for MySQL-family servers: run pinned scenarios on
    real servers and record trustworthy results."""


@cli.command(epilog=RUN_EPILOG)
@click.argument("scenario")
@click.option("--profile", "-p", default="smoke", show_default=True,
              help="Scale of the run: smoke (<= 3 min), nightly (~30 min), seed (the seed report's size).")
@click.option("--server", "server_spec", default="local", show_default=True, metavar="SPEC",
              help="Server to test: local, local:/path/to/basedir, docker:IMAGE:TAG[@sha256:…], "
                   "tarball:/path/or/url.tar.gz, build:FLAVOR@GIT_REF, dsn:mysql://USER@HOST:PORT "
                   "(password in $PERFCI_DSN_PASSWORD).")
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE",
              help="Server option for this run only, on top of the scenario's (repeatable). "
                   "Recorded in the result; an option the server does not know is an error.")
@click.option("--config-file", type=click.Path(path_type=Path), metavar="MY.CNF",
              help="Server options from a my.cnf ([mysqld] section) for this run only.")
@click.option("--case", "case_patterns", multiple=True, metavar="PATTERN",
              help="Only the matrix cases whose id matches this glob, e.g. 'cx_full/*' (repeatable).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True,
              help="Directory for result files (JSON) and summaries (Markdown).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Independent runs (each on a fresh server): one result file each, the samples a baseline needs.")
@click.option("--workdir", type=click.Path(path_type=Path), default=None,
              help="Where datadirs are created (use the disk under test). Default: the system temp dir.")
@click.option("--keep-workdir", is_flag=True, help="Keep the datadir, my.cnf and logs after the run.")
@click.option("--no-snapshot", is_flag=True,
              help="Prepare the dataset even where the scenario allows restoring it from the snapshot cache.")
@click.option("--snapshot-dir", type=click.Path(path_type=Path), default=None, envvar="PERFCI_SNAPSHOT_DIR",
              help="Dataset snapshot cache (default ~/.cache/perfci/snapshots; evicted LRU beyond "
                   "$PERFCI_SNAPSHOT_MAX_GB, default 50).")
@click.option("--runner-class", envvar="PERFCI_RUNNER_CLASS", default="local", show_default=True,
              help="Label of this host's kind (baselines are kept per runner class). Env: PERFCI_RUNNER_CLASS.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output; print only result paths and summaries.")
def run(scenario, profile, server_spec, configs, config_file, case_patterns, out_dir, repeat, workdir, keep_workdir,
        no_snapshot, snapshot_dir, runner_class, quiet):
    """Run SCENARIO (a name from scenarios/ or a path to a .yaml file)."""
    _handle_cancellation()
    progress = Progress(quiet=quiet)
    try:
        overrides = [parse_override(c) for c in configs]
        if config_file:
            overrides = parse_config_file(config_file) + overrides
        parent = Path(workdir or tempfile.gettempdir())
        written = []
        for i in range(repeat):
            snapshots = None if no_snapshot else SnapshotCache(snapshot_dir)
            plans = plan_runs(scenario, profile, server_spec, overrides, parent, list(case_patterns),
                              snapshots=snapshots)
            if repeat > 1:
                progress.info(f"== run {i + 1} of {repeat}")
            for plan in plans:
                result = execute(plan, progress, keep_workdir=keep_workdir, runner_class=runner_class)
                path = out_dir / f"{result['id']}.json"
                write_json_atomic(path, result)
                summary = summary_markdown(result)
                write_atomic(path.with_suffix(".md"), summary)
                click.echo(summary)
                click.echo(f"result: {path}")
                written.append(result)
        if len({r["case"] for r in written}) > 1:
            index = matrix_markdown(written, out_dir)
            index_path = out_dir / f"{written[0]['scenario']['name']}-{profile}-matrix.md"
            write_atomic(index_path, index)
            click.echo(f"matrix report: {index_path}")
    except PerfciError as err:
        _fail(err)
    except KeyboardInterrupt:
        click.echo("interrupted: the server was shut down and no result was written", err=True)
        sys.exit(130)


def _guarded(fn):
    """Run a command body: one clear line for a user mistake, the documented exit codes."""
    try:
        return fn()
    except PerfciError as err:
        _fail(err)


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path),
              help="A baseline file to compare with (default: the one for each result under --baseline-dir).")
@click.option("--baseline-dir", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True)
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), default=DEFAULT_CONFIDENCE, show_default=True,
              help="Two-sided confidence of the ratio interval.")
@click.option("--cv-floor", type=click.FloatRange(0, 1), default=DEFAULT_CV_FLOOR, show_default=True,
              help="Smallest run-level coefficient of variation assumed.")
@click.option("--prior-cv", type=click.FloatRange(0, 1), default=DEFAULT_PRIOR_CV, show_default=True,
              help="Prior run-level CV (worth two samples) that moderates the measured spread.")
@click.option("--report", "report_file", type=click.Path(path_type=Path), help="Also write the Markdown report here.")
@click.option("--plots", "plots_dir", type=click.Path(path_type=Path),
              help="Write PNG plots (per-interval throughput current vs baseline) to this directory.")
def compare(results, baseline_file, baseline_dir, confidence, cv_floor, prior_cv, report_file, plots_dir):
    """Judge RESULT files (or directories of them) against stored baselines.

    \b
    Per metric: regression, improvement, unchanged, inconclusive or no-baseline,
    with the change, a confidence interval for current/baseline and the tolerance.
    Exit codes: 0 no regression, 1 regression found, 2 bad input, 3 infrastructure failure."""
    def body():
        loaded = [load_result(p) for p in expand(list(results))]
        comparisons = compare_results(loaded, baseline_file, baseline_dir, confidence, cv_floor, prior_cv)
        plots = None
        if plots_dir:
            from .plots import interval_plot
            plots = [[str(interval_plot(c, plots_dir))] if c.baseline and not c.skipped else [] for c in comparisons]
        text = comparison_markdown(comparisons, confidence, plots)
        if report_file:
            write_atomic(report_file, text)
        click.echo(text)
        if any(c.regressions for c in comparisons):
            sys.exit(EXIT_REGRESSION)
    _guarded(body)


@cli.group()
def baseline():
    """Create and extend stored baselines."""


@baseline.command("update")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline-dir", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True)
@click.option("--baseline", "baseline_file", type=click.Path(path_type=Path),
              help="Write this baseline file instead of the one the layout names.")
@click.option("--window", type=click.IntRange(1, 1000), default=None,
              help=f"Keep the last N samples (default: the baseline's own, {DEFAULT_WINDOW} for a new one).")
@click.option("--force", is_flag=True, help="Accept results that would be refused; the reasons are recorded.")
def baseline_update(results, baseline_dir, baseline_file, window, force):
    """Add accepted RESULT files (or directories) to their baselines.

    Refuses failed or partial runs and results of another scenario hash, profile,
    runner class or host kind (unless --force). Writes are atomic."""
    def body():
        loaded = [(p, load_result(p)) for p in expand(list(results))]
        for path, added, kept in update_baselines(loaded, baseline_dir, baseline_file, window, force):
            click.echo(f"{path}: +{added} sample(s), {kept} kept")
    _guarded(body)


@cli.command()
@click.argument("scenario")
@click.option("--a", "a_spec", default="local", show_default=True, metavar="SPEC", help="Server of side A (the reference).")
@click.option("--b", "b_spec", default="local", show_default=True, metavar="SPEC", help="Server of side B (the candidate).")
@click.option("--a-config", multiple=True, metavar="NAME=VALUE", help="Server option for side A only (repeatable).")
@click.option("--b-config", multiple=True, metavar="NAME=VALUE", help="Server option for side B only (repeatable).")
@click.option("--a-scenario", type=click.Path(path_type=Path), default=None,
              help="Scenario file for side A only (e.g. the PR base's version of a changed scenario).")
@click.option("--profile", "-p", default="smoke", show_default=True)
@click.option("--rounds", type=click.IntRange(2, 100), default=3, show_default=True,
              help="Paired rounds; each runs A and B once, order alternating.")
@click.option("--case", "case_pattern", default=None, metavar="PATTERN",
              help="Matrix scenarios: the case to compare (glob; default: the profile's first case).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True)
@click.option("--workdir", type=click.Path(path_type=Path), default=None)
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), default=DEFAULT_CONFIDENCE, show_default=True)
@click.option("--report", "report_file", type=click.Path(path_type=Path), help="Also write the Markdown report here.")
@click.option("--runner-class", envvar="PERFCI_RUNNER_CLASS", default="local", show_default=True)
@click.option("--quiet", "-q", is_flag=True)
def ab(scenario, a_spec, b_spec, a_config, b_config, a_scenario, profile, rounds, case_pattern, out_dir, workdir,
       confidence, report_file, runner_class, quiet):
    """Paired A/B runs of SCENARIO: B against A, round by round on this host.

    \b
    Examples:
      perfci ab rebuild-after-delete --b-config innodb_flush_log_at_trx_commit=1 --rounds 4
      perfci ab rebuild-after-delete --a local:/opt/mysql-8.0.42 --b local:/opt/mysql-8.4.5
    Exit codes: 0 no regression of B, 1 regression of B, 2 bad input, 3 infrastructure failure."""
    _handle_cancellation()
    progress = Progress(quiet=quiet)
    try:
        sides = (Side("a", a_spec, [parse_override(c) for c in a_config], str(a_scenario) if a_scenario else None),
                 Side("b", b_spec, [parse_override(c) for c in b_config]))
        parent = Path(workdir or tempfile.gettempdir())
        for side in sides:  # all input checks before the first round
            checked = plan_run(side.scenario or scenario, profile, side.server_spec, side.overrides,
                               parent / "perfci-ab-check", case_pattern=case_pattern)
        if checked.resolved.case != "default":
            progress.info(f"A/B on case {checked.resolved.case} (choose another with --case)")
        results = run_ab(scenario, profile, sides, rounds, out_dir, parent, progress, runner_class,
                         case=checked.resolved.case if checked.resolved.case != "default" else None)
        rows = judge_pairs(results, confidence)
        text = ab_markdown(sides, results, rows, confidence)
        if report_file:
            write_atomic(report_file, text)
        click.echo(text)
        if any(r.verdict.verdict == "regression" for r in rows):
            sys.exit(EXIT_REGRESSION)
    except PerfciError as err:
        _fail(err)
    except KeyboardInterrupt:
        click.echo("interrupted: the server was shut down; finished rounds' result files are kept", err=True)
        sys.exit(130)


@cli.group()
def issues():
    """Regression issues on GitHub (through gh)."""


@issues.command("sync")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline-dir", type=click.Path(path_type=Path), default=DEFAULT_ROOT, show_default=True)
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@click.option("--run-url", default="", help="Link to the workflow run and its artifacts.")
@click.option("--close-after", type=click.IntRange(1, 100), default=DEFAULT_CLOSE_AFTER, show_default=True,
              help="Close an issue after this many consecutive clean runs.")
@click.option("--dry-run", "dry_run_dir", type=click.Path(path_type=Path),
              help="Write each issue's Markdown to DIR/<fingerprint>.md instead of calling GitHub.")
def issues_sync(results, baseline_dir, repo, run_url, close_after, dry_run_dir):
    """Open, update or close one issue per regressed metric of RESULTS."""
    def body():
        loaded = [load_result(p) for p in expand(list(results))]
        comparisons = compare_results(loaded, baseline_root=baseline_dir)
        for line in issues_mod.sync(comparisons, run_url, repo, dry_run_dir, close_after):
            click.echo(line)
    _guarded(body)


@cli.group()
def history():
    """The append-only history of result summaries, and change points in it."""


@history.command("append")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--dir", "history_dir", type=click.Path(path_type=Path), default=Path("history"), show_default=True)
def history_append(results, history_dir):
    """Append RESULT files' summaries (a result already there is skipped)."""
    def body():
        loaded = [load_result(p) for p in expand(list(results))]
        for path, added in history_mod.append(loaded, history_dir):
            click.echo(f"{path}: +{added}")
    _guarded(body)


@history.command("changes")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--metric", "metrics", multiple=True, help="Only these metric keys (e.g. after.qps_write).")
@click.option("--pvalue", type=click.FloatRange(0.0001, 0.5), default=history_mod.DEFAULT_PVALUE, show_default=True)
@click.option("--plots", "plots_dir", type=click.Path(path_type=Path), help="Write a PNG per metric with a change.")
def history_changes(files, metrics, pvalue, plots_dir):
    """Change points (E-Divisive means) in history FILES (.jsonl) or directories of them."""
    def body():
        paths = [q for p in files for q in (sorted(Path(p).rglob("*.jsonl")) if Path(p).is_dir() else [Path(p)])]
        for path in paths:
            entries = history_mod.read_history(path)
            found = history_mod.detect(entries, list(metrics) or None, pvalue)
            click.echo(f"## {path} ({len(entries)} runs)")
            if not found:
                click.echo("no change points")
            for key, changes in found.items():
                for c in changes:
                    pct = "–" if c["change_pct"] is None else f"{c['change_pct']:+.1f} %"
                    click.echo(f"- `{key}`: {pct} at run {c['index']} ({c['result_id']}, {c['date'][:10]}, "
                               f"server {c['server_version']}): {c['before_mean']:.4g} -> {c['after_mean']:.4g}")
                if plots_dir:
                    from .plots import history_plot
                    target = Path(plots_dir) / f"history-{slug(path.stem)}-{slug(key)}.png"
                    history_plot(key, history_mod.series(entries, key), [c["index"] for c in changes], target)
    _guarded(body)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def validate(files):
    """Check scenario files (default: every file in scenarios/) and all their profiles."""
    paths = list(files) or all_scenario_files()
    bad = 0
    for path in paths:
        try:
            scenario, _ = load_scenario(str(path))
            counts = [len(cases(scenario, p, str(path))) for p in scenario.profiles]  # every case resolves
            click.echo(f"ok    {path}  profiles: " + ", ".join(
                f"{p} ({resolve(scenario, p, str(path)).content_hash()[7:15]}, {n} case{'s' if n > 1 else ''})"
                for p, n in zip(scenario.profiles, counts)))
        except PerfciError as err:
            bad += 1
            click.echo(f"error: {err}", err=True)
    if bad:
        sys.exit(EXIT_BAD_INPUT)


@cli.command(name="list")
def list_scenarios():
    """Show the scenarios, their profiles and expected run time."""
    for path in all_scenario_files():
        try:
            scenario, _ = load_scenario(str(path))
        except PerfciError as err:
            click.echo(f"{path.stem}: INVALID: {err}")
            continue
        click.echo(f"{scenario.name}" + (f"  (seed {scenario.seed})" if scenario.seed else ""))
        click.echo(f"  {scenario.description}")
        for axis in scenario.axes:
            click.echo(f"  axis {axis.name}: {', '.join(axis.ids())}")
        for name, prof in scenario.profiles.items():
            n = len(cases(scenario, name, str(path)))
            click.echo(f"  --profile {name:<8} ~{prof.expected_minutes:g} min  {n} case(s)  {prof.description}")
        click.echo("")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
