"""`perfci sweep`: a scenario across servers, each A/B'd against the first."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import click

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.judge.paired import ALPHA
from perfci.providers.servers import load_servers
from perfci.report.opening import sweep_opening
from perfci.report.sweep_report import heatmap, sweep_markdown
from perfci.sessions import sweep_session
from perfci.sessions.session import handle_cancellation
from perfci.sessions.sized_ab import AbPlan
from perfci.util.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_REGRESSION
from perfci.util.files import write_atomic
from perfci.util.progress import Progress


@click.command()
@click.argument("scenario")
@click.option("--servers", "server_list", default=None, metavar="BASE,ID,...",
              help="The base first, then the servers to A/B against it (servers.yaml ids or specs).")
@click.option("--between", nargs=2, default=None, metavar="FIRST LAST",
              help="Instead of --servers: the releases of one flavor from FIRST to LAST, in version order "
                   "(servers.yaml's `flavor` and `version`); the oldest is the base.")
@options.profile
@click.option("--case", "case_patterns", multiple=True, metavar="PATTERN", help="Only these cases (glob; repeatable).")
@options.ab_phases
@options.ab_plan_options
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("sweep"), show_default=True,
              help="sweep-<scenario>-<profile>.json (resumable), .md, .png, and every A/B's bursts and report.")
@options.workdir
@options.runner_class
@options.host_wait
@options.quiet
@options.json_output("sweep")
def sweep(scenario: str, server_list: str | None, between: tuple[str, str] | None, profile: str,
          case_patterns: tuple[str, ...], phases: tuple[str, ...], ab: AbPlan, out_dir: Path, workdir: Path | None,
          runner_class: str, host_wait: float, quiet: bool, json_out: Path | None) -> int:
    """SCENARIO on several servers, each A/B'd against the first (interleaved, sized
    like `perfci ab`): per case and phase, B/base with its interval, as a Markdown
    table and a heatmap; the JSON file keeps every finished A/B, and a rerun skips them.

    \b
    Examples:
      perfci sweep microbench --servers mysql-8.0.15,mysql-8.0.31
      perfci sweep microbench --between mysql-8.0.15 mysql-8.0.31 --target-mde 0.1
      perfci sweep microbench --between mysql-5.7.22 mysql-8.0.31 --phase random-ranges --phase full-scan
    Exit codes: 0 no server slower than the base, 1 one is, 2 bad input, 3 an A/B
    failed on this runner (recorded: a rerun measures it again) or another
    infrastructure or internal error."""
    handle_cancellation()
    progress = Progress(quiet=quiet)
    if bool(server_list) == bool(between):
        raise click.UsageError("give either --servers BASE,ID,... or --between FIRST LAST")
    if between:
        servers = load_servers().releases_from(*between)  # FIRST is the base
    else:
        servers = [s.strip() for s in (server_list or "").split(",") if s.strip()]
    out_dir.mkdir(parents=True, exist_ok=True)
    found = sweep_session.start(scenario, profile, servers, runner_class, out_dir, phases)
    progress.info(f"sweep of {found.scenario} ({profile}): base {servers[0]}; {', '.join(servers[1:])}")
    parent = Path(workdir or tempfile.gettempdir())
    try:
        with exclusive_host(command_line(), allow_busy=False, wait_s=host_wait):
            found = sweep_session.run(found, scenario, ab, parent, out_dir, progress, list(case_patterns) or None)
    except KeyboardInterrupt:
        click.echo("interrupted: both servers were shut down; the finished A/Bs are kept (a rerun skips them)", err=True)
        return EXIT_INTERRUPTED
    base = sweep_session.sweep_path(out_dir, found.scenario, found.profile)
    picture = heatmap(found, base.with_suffix(".png"))
    again = shlex.join(["perfci", "sweep", scenario, *(["--between", *between] if between else
                                                       ["--servers", ",".join(servers)]),
                        "--profile", profile, *[x for p in phases for x in ("--phase", p)],
                        *[x for c in case_patterns for x in ("--case", c)]])
    text = sweep_markdown(found, picture, sweep_opening(found, ab.alpha if ab.alpha is not None else ALPHA, again))
    write_atomic(base.with_suffix(".md"), text)
    options.text_out(json_out)(text)
    options.emit_json(found.model_dump(mode="json", by_alias=True), json_out)
    if any(c.status == "failed" for c in found.cells):
        return EXIT_INFRA
    return EXIT_REGRESSION if any(c.regressions for c in found.cells) else 0
