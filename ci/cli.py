"""The `perfci` command line."""

from __future__ import annotations

import signal
import sys
import tempfile
import uuid
from pathlib import Path

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, PerfciError
from .files import write_atomic, write_json_atomic
from .mycnf import parse_config_file, parse_override
from .progress import Progress
from .report import summary_markdown
from .runner import execute, plan_run
from .scenario import all_scenario_files, load_scenario, resolve

RUN_EPILOG = """\b
Examples:
  perfci run rebuild-after-delete --profile smoke
  perfci run rebuild-after-delete --profile nightly --server local:/opt/mysql-8.0.42 --repeat 3
  perfci run rebuild-after-delete --config innodb_flush_log_at_trx_commit=1 --config-file extra.cnf

\b
Each run starts a throwaway server in a fresh datadir (under --workdir), runs
the scenario's steps, shuts the server down and writes one result file (JSON)
and its Markdown summary to --out. Nothing is written for a failed run.
Exit codes: 0 ok, 2 bad input, 3 infrastructure failure (server, sysbench).
"""


def _fail(err: PerfciError) -> None:
    click.echo(f"error: {err}", err=True)
    if err.detail:
        click.echo("\n".join("  | " + line for line in err.detail.splitlines()), err=True)
    sys.exit(err.exit_code)


def _terminate_as_interrupt(signum, frame):  # SIGTERM from CI cancels: clean up as for Ctrl-C
    raise KeyboardInterrupt


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
              help="Server to test: 'local' (mariadbd/mysqld on PATH) or 'local:/path/to/basedir'.")
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE",
              help="Server option for this run only, on top of the scenario's (repeatable). "
                   "Recorded in the result; an option the server does not know is an error.")
@click.option("--config-file", type=click.Path(path_type=Path), metavar="MY.CNF",
              help="Server options from a my.cnf ([mysqld] section) for this run only.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True,
              help="Directory for result files (JSON) and summaries (Markdown).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Independent runs (each on a fresh server): one result file each, the samples a baseline needs.")
@click.option("--workdir", type=click.Path(path_type=Path), default=None,
              help="Where datadirs are created (use the disk under test). Default: the system temp dir.")
@click.option("--keep-workdir", is_flag=True, help="Keep the datadir, my.cnf and logs after the run.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output; print only result paths and summaries.")
def run(scenario, profile, server_spec, configs, config_file, out_dir, repeat, workdir, keep_workdir, quiet):
    """Run SCENARIO (a name from scenarios/ or a path to a .yaml file)."""
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    progress = Progress(quiet=quiet)
    try:
        overrides = [parse_override(c) for c in configs]
        if config_file:
            overrides = parse_config_file(config_file) + overrides
        parent = Path(workdir or tempfile.gettempdir())
        for i in range(repeat):
            run_dir = parent / f"perfci-{uuid.uuid4().hex[:8]}"
            plan = plan_run(scenario, profile, server_spec, overrides, run_dir)
            if repeat > 1:
                progress.info(f"== run {i + 1} of {repeat}")
            result = execute(plan, progress, keep_workdir=keep_workdir)
            path = out_dir / f"{result['id']}.json"
            write_json_atomic(path, result)
            summary = summary_markdown(result)
            write_atomic(path.with_suffix(".md"), summary)
            click.echo(summary)
            click.echo(f"result: {path}")
    except PerfciError as err:
        _fail(err)
    except KeyboardInterrupt:
        click.echo("interrupted: the server was shut down and no result was written", err=True)
        sys.exit(130)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def validate(files):
    """Check scenario files (default: every file in scenarios/) and all their profiles."""
    paths = list(files) or all_scenario_files()
    bad = 0
    for path in paths:
        try:
            scenario, _ = load_scenario(str(path))
            hashes = [resolve(scenario, p, str(path)).content_hash()[7:15] for p in scenario.profiles]
            click.echo(f"ok    {path}  profiles: {', '.join(f'{p} ({h})' for p, h in zip(scenario.profiles, hashes))}")
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
        for name, prof in scenario.profiles.items():
            click.echo(f"  --profile {name:<8} ~{prof.expected_minutes:g} min  {prof.description}")
        click.echo("")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
