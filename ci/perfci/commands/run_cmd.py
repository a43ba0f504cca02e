"""`perfci run`: run a scenario's cases on throwaway servers and write results."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.model.metrics import flatten
from perfci.model.outputs import RunEntry, RunOutput
from perfci.providers.mycnf import parse_config_file, parse_override
from perfci.sessions.session import handle_cancellation, run_session
from perfci.store.results import load_result
from perfci.util.errors import EXIT_INTERRUPTED
from perfci.util.progress import Progress

EPILOG = """\b
Examples:
  perfci run rebuild-after-delete --profile smoke
  perfci run rebuild-after-delete --profile nightly --server local:/opt/mysql-8.0.42 --repeat 3
  perfci run rebuild-after-delete --config innodb_flush_log_at_trx_commit=1 --config-file extra.cnf
  perfci run change-buffer-matrix --profile nightly --case 'cx_full/*'
  perfci run rebuild-after-delete --server docker:percona/percona-server:8.0.36
  perfci run rebuild-after-delete --server mysql-8.0.31      (an id from servers.yaml: perfci servers list)
  perfci run microbench --measure work --work-counter callgrind   (instructions per transaction, counted)
  PERFCI_DSN_PASSWORD=... perfci run rebuild-after-delete --server dsn:mysql://bench@db1:3306

\b
Each run (one per matrix case) starts a throwaway server in a fresh datadir
(under --workdir) or restores the dataset from the snapshot cache, runs the
scenario's steps, shuts the server down and writes one result file (JSON) and
its Markdown summary to --out; a matrix run adds <scenario>-<profile>-matrix.md
and plots. A case the server cannot run is a `skipped` result with the reason.
Nothing is written for a failed run.
Exit codes: 0 ok, 2 bad input, 3 infrastructure failure (server, sysbench) or internal error.
"""

SERVER_HELP = ("Server to test: an id from servers.yaml (perfci servers list), or a spec: local, "
               "local:/path/to/basedir, docker:IMAGE:TAG[@sha256:…][#network=published] (default: host network, "
               "127.0.0.1), tarball:/path/or/url.tar.gz#sha256=HEX, "
               "maven:GROUP:ARTIFACT:VERSION/PATH#sha256=HEX, build:FLAVOR@GIT_REF, dsn:mysql://USER@HOST:PORT "
               "(password in $PERFCI_DSN_PASSWORD).")


@click.command(epilog=EPILOG)
@click.argument("scenario")
@options.profile
@click.option("--server", "server_spec", default="local", show_default=True, metavar="SPEC", help=SERVER_HELP)
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE",
              help="Server option for this run only, on top of the scenario's (repeatable). "
                   "Recorded in the result; an option the server does not know is an error.")
@click.option("--config-file", type=click.Path(path_type=Path), metavar="MY.CNF",
              help="Server options from a my.cnf ([mysqld] section) for this run only.")
@click.option("--case", "case_patterns", multiple=True, metavar="PATTERN",
              help="Only the matrix cases whose id matches this glob, e.g. 'cx_full/*' (repeatable).")
@options.out_dir
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Independent runs (each on a fresh server): one result file each, the samples a baseline needs.")
@options.workdir
@click.option("--keep-workdir", is_flag=True, help="Keep the datadir, my.cnf and logs after the run.")
@click.option("--no-snapshot", is_flag=True,
              help="Prepare the dataset even where the scenario allows restoring it from the snapshot cache.")
@click.option("--snapshot-dir", type=click.Path(path_type=Path), default=None, envvar="PERFCI_SNAPSHOT_DIR",
              help="Dataset snapshot cache (default ~/.cache/perfci/snapshots; evicted LRU beyond "
                   "$PERFCI_SNAPSHOT_MAX_GB, default 50).")
@options.run_measure
@options.work_counter
@options.runner_class
@options.allow_busy
@options.host_wait
@options.quiet
@options.json_output("run")
def run(scenario: str, profile: str, server_spec: str, configs: tuple[str, ...], config_file: Path | None,
        case_patterns: tuple[str, ...], out_dir: Path, repeat: int, workdir: Path | None, keep_workdir: bool,
        no_snapshot: bool, snapshot_dir: Path | None, measure: str, work_counter: str, runner_class: str,
        allow_busy: bool, host_wait: float, quiet: bool, json_out: Path | None) -> int:
    """Run SCENARIO (a name from scenarios/ or a path to a .yaml file)."""
    handle_cancellation()
    progress = Progress(quiet=quiet)
    overrides = [parse_override(c) for c in configs]
    if config_file:
        overrides = parse_config_file(config_file) + overrides
    [server_spec] = options.check_inputs(scenario, profile, server_spec)  # typos: exit 2 even on a busy host

    say = options.text_out(json_out)
    saved: list[RunEntry] = []

    def show(path: Path, summary: str) -> None:
        say(summary)
        say(f"result: {path}")
        r = load_result(path)
        saved.append(RunEntry(path=str(path), id=r.id, case=r.case, status=r.status.value, valid=r.validity.valid,
                              reasons=r.validity.reasons, metrics=flatten(r)))

    try:
        with exclusive_host(command_line(), allow_busy, ignore_servers=server_spec.startswith("dsn:"),
                            wait_s=host_wait):
            _, matrix = run_session(scenario, profile, server_spec, overrides, Path(workdir or tempfile.gettempdir()),
                                    out_dir, progress, list(case_patterns), repeat, snapshot_dir, not no_snapshot,
                                    keep_workdir, runner_class, work_counter if measure == "work" else None,
                                    on_saved=show)
    except KeyboardInterrupt:
        click.echo("interrupted: the server was shut down and no result was written", err=True)
        return EXIT_INTERRUPTED
    if matrix:
        say(f"matrix report: {matrix}")
    options.emit_json(RunOutput(results=saved, matrix_report=str(matrix) if matrix else None).dump(), json_out)
    return 0
