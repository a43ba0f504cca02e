"""`perfci ab`: paired A/B rounds of one case on this host."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import click
from click.core import ParameterSource

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.model.ab_verdict import AbVerdict
from perfci.model.result import Result
from perfci.model.verdicts import Outcome
from perfci.providers.mycnf import parse_override
from perfci.report.opening import with_opening
from perfci.run.plan import plan_run
from perfci.sessions.both_ab import run_both, size_both
from perfci.sessions.interleave import why_not_interleaved
from perfci.sessions.rounds import Side, ab_markdown, judge_pairs, rounds_verdict, run_ab
from perfci.sessions.session import handle_cancellation
from perfci.sessions.sized_ab import AbPlan, plan_and_size, run_sized
from perfci.util.errors import EXIT_INTERRUPTED, EXIT_REGRESSION
from perfci.util.files import write_atomic
from perfci.util.progress import Progress
from perfci.util.runner import temp_prefix


@click.command()
@click.argument("scenario")
@click.option("--a", "a_spec", default="local", show_default=True, metavar="SPEC",
              help="Server of side A (the reference): a spec or a servers.yaml id.")
@click.option("--b", "b_spec", default="local", show_default=True, metavar="SPEC",
              help="Server of side B (the candidate): a spec or a servers.yaml id.")
@click.option("--a-config", multiple=True, metavar="NAME=VALUE", help="Server option for side A only (repeatable).")
@click.option("--b-config", multiple=True, metavar="NAME=VALUE", help="Server option for side B only (repeatable).")
@click.option("--a-scenario", type=click.Path(path_type=Path), default=None,
              help="Scenario file for side A only (e.g. the PR base's version of a changed scenario).")
@options.profile
@click.option("--mode", type=click.Choice(["interleaved", "rounds", "auto"]), default="interleaved", show_default=True,
              help="interleaved: both servers alive, fixed-work bursts alternating, the idle side frozen; "
                   "rounds: whole runs on fresh servers (for what cannot be split: load time, DDL); "
                   "auto: interleaved where both sides run the same fixed work, else rounds (says which).")
@click.option("--rounds", type=click.IntRange(2, 100), default=3, show_default=True,
              help="--mode rounds: paired rounds; each runs A and B once, order alternating (2 measure but judge "
                   "nothing: one degree of freedom; 3 or more judge).")
@options.ab_plan_options_and_both
@click.option("--plan-only", is_flag=True, help="--mode interleaved: print the size and its minutes, run nothing.")
@click.option("--level", type=click.FloatRange(1e-6, 0.05), default=None, envvar="PERFCI_AB_LEVEL", metavar="P",
              help="--mode interleaved: the A/B's family-wise false-alarm level over its judged metrics and looks "
                   "[default: 0.005]; it is sized for its target at this level. A check that runs several A/Bs "
                   "shares its own level over them (perfci pr-check does). Env: PERFCI_AB_LEVEL.")
@click.option("--warmup", type=click.IntRange(0, 1000), default=2, show_default=True,
              help="--mode interleaved: burst pairs dropped at the start of each phase.")
@click.option("--a-sql", multiple=True, metavar="STATEMENT",
              help="SQL run on side A after its dataset is ready (repeatable; e.g. a trigger, an index).")
@click.option("--b-sql", multiple=True, metavar="STATEMENT", help="SQL run on side B after its dataset is ready.")
@click.option("--case", "case_pattern", default=None, metavar="PATTERN",
              help="Matrix scenarios: the case to compare (glob; default: the profile's first case).")
@options.ab_phases
@options.out_dir
@options.workdir
@options.confidence
@options.report
@options.json_out
@options.runner_class
@options.allow_busy
@options.host_wait
@options.quiet
def ab(scenario: str, a_spec: str, b_spec: str, a_config: tuple[str, ...], b_config: tuple[str, ...],
       a_scenario: Path | None, profile: str, mode: str, rounds: int, ab: AbPlan, plan_only: bool, level: float | None,
       a_sql: tuple[str, ...], b_sql: tuple[str, ...], case_pattern: str | None,
       phases: tuple[str, ...], out_dir: Path,
       workdir: Path | None, confidence: float, report_file: Path | None, json_out: Path | None, runner_class: str,
       allow_busy: bool, host_wait: float, quiet: bool) -> int:
    """A/B of SCENARIO on this host: B against A, interleaved by default (both servers
    alive from one dataset, fixed-work bursts alternating A B B A, the idle side
    frozen); --mode rounds runs whole runs on fresh servers instead.

    \b
    Examples:
      perfci ab rebuild-after-delete --b-config innodb_flush_log_at_trx_commit=1
      perfci ab rebuild-after-delete --a local:/opt/mysql-8.0.42 --b local:/opt/mysql-8.4.5
      perfci ab rebuild-after-delete --mode rounds --rounds 4 --b-config innodb_page_size=8k
      perfci ab microbench --a mysql-8.0.15 --b mysql-8.0.31 --phase point-query
    Exit codes: 0 no regression of B, 1 regression of B, 2 bad input, 3 infrastructure or internal error."""
    handle_cancellation()
    progress = Progress(quiet=quiet)
    a_spec, b_spec = options.check_inputs(scenario, profile, a_spec, b_spec)  # typos: exit 2 before the lock
    sides = (Side("a", a_spec, [parse_override(c) for c in a_config], str(a_scenario) if a_scenario else None),
             Side("b", b_spec, [parse_override(c) for c in b_config]))
    if mode == "auto":
        reason = why_not_interleaved(scenario, profile, sides, case_pattern)
        mode = "rounds" if reason else "interleaved"
        click.echo(f"--mode auto: {mode}" + (f" ({reason})" if reason else ""), err=True)
    else:
        refuse_other_modes_options(mode)
    parent = Path(workdir or tempfile.gettempdir())
    if level is not None:
        ab = replace(ab, alpha=level)
    dsn_only = all(side.server_spec.startswith("dsn:") for side in sides)
    if mode == "interleaved":
        if plan_only:
            sizes = (size_both(scenario, profile, sides, parent, case_pattern, ab, runner_class)
                     if ab.measure == options.BOTH else
                     [(ab, plan_and_size(scenario, profile, sides, parent, case_pattern, ab, runner_class))])
            for part, sized in sizes:
                resolved = sized.plans[0].resolved
                if sized.model_note:
                    click.echo(sized.model_note, err=True)
                measured = f" (--measure {part.measure})" if len(sizes) > 1 else ""
                click.echo(f"{resolved.name} case {resolved.case}{measured}: {sized.design.describe()}")
            return 0
        return _interleaved(scenario, profile, sides, parent, case_pattern, ab,
                            (list(a_sql), list(b_sql)), out_dir, report_file, json_out, runner_class, allow_busy,
                            host_wait, dsn_only, progress)
    try:
        with exclusive_host(command_line(), allow_busy, ignore_servers=dsn_only, wait_s=host_wait):
            results = _checked_rounds(scenario, profile, sides, rounds, out_dir, parent, progress, runner_class,
                                      case_pattern)
    except KeyboardInterrupt:
        click.echo("interrupted: the server was shut down; finished rounds' result files are kept", err=True)
        return EXIT_INTERRUPTED
    rows = judge_pairs(results, confidence)
    verdict = rounds_verdict(sides, results, rows, str(report_file) if report_file else None)
    text = with_opening(ab_markdown(sides, results, rows, confidence), verdict)
    return _verdict_out(text, verdict, report_file, json_out)


def _verdict_out(text: str, verdict: AbVerdict, report_file: Path | None, json_out: Path | None) -> int:
    """The report (to --report, and stdout unless the JSON goes there) and the JSON
    verdict (--json); the exit code from the typed outcome."""
    if report_file:
        write_atomic(report_file, text)
    options.emit_json(verdict.dump(), json_out)
    if json_out is None or str(json_out) != "-":
        click.echo(text)
    return EXIT_REGRESSION if verdict.outcome == Outcome.REGRESSION else 0


# options that only one mode reads: given in the other mode they would be silently ignored
MODE_OPTIONS = {"rounds": ("rounds", "confidence"),
                "interleaved": ("target_mde", "budget_minutes", "size_by", "bursts", "instances", "plan_only", "level", "warmup",
                                "min_effect", "noise_dir", "explain", "a_sql", "b_sql", "measure", "work_counter",
                                "phases")}


def refuse_other_modes_options(mode: str) -> None:
    ctx = click.get_current_context()
    for other, names in MODE_OPTIONS.items():
        # from the command line only: an environment default (PERFCI_AB_SIZE) is no mistake of this command
        given = [n for n in names if other != mode and ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
        if given:
            flags = ", ".join(next(p.opts[0] for p in ctx.command.params if p.name == n) for n in given)
            raise click.UsageError(f"{flags} only apply to --mode {other} (this A/B is --mode {mode})")


def _checked_rounds(scenario: str, profile: str, sides: tuple[Side, Side], rounds: int, out_dir: Path, parent: Path,
                    progress: Progress, runner_class: str, case_pattern: str | None) -> list[list[Result]]:
    for side in sides:  # all input checks before the first round
        checked = plan_run(side.scenario or scenario, profile, side.server_spec, side.overrides,
                           parent / f"{temp_prefix()}ab-check", case_pattern=case_pattern)
    case = checked.resolved.case
    if case != "default":
        progress.info(f"A/B on case {case} (choose another with --case)")
    return run_ab(scenario, profile, sides, rounds, out_dir, parent, progress, runner_class,
                  case=case if case != "default" else None)


def _interleaved(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case_pattern: str | None,
                 ab: AbPlan, setup_sql: tuple[list[str], list[str]], out_dir: Path, report_file: Path | None,
                 json_out: Path | None, runner_class: str, allow_busy: bool, host_wait: float,
                 dsn_only: bool, progress: Progress) -> int:
    if ab.measure == options.BOTH:
        return _both(scenario, profile, sides, parent, case_pattern, ab, setup_sql, out_dir, report_file, json_out,
                     runner_class, allow_busy, host_wait, dsn_only, progress)
    try:
        with exclusive_host(command_line(), allow_busy, ignore_servers=dsn_only, wait_s=host_wait):
            sized = plan_and_size(scenario, profile, sides, parent, case_pattern, ab, runner_class)  # checks first
            if (case := sized.plans[0].resolved.case) != "default":
                progress.info(f"A/B on case {case} (choose another with --case)")
            done = run_sized(scenario, profile, sides, parent, case_pattern, ab, out_dir, progress,
                             runner_class, setup_sql, sized=sized)
    except KeyboardInterrupt:
        click.echo("interrupted: both servers were shut down; nothing was judged", err=True)
        return EXIT_INTERRUPTED
    assert done.verdict is not None
    verdict = done.verdict.model_copy(update={"report_file": str(report_file)}) if report_file else done.verdict
    return _verdict_out(done.report, verdict, report_file, json_out)


def _both(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case_pattern: str | None,
          ab: AbPlan, setup_sql: tuple[list[str], list[str]], out_dir: Path, report_file: Path | None,
          json_out: Path | None, runner_class: str, allow_busy: bool, host_wait: float,
          dsn_only: bool, progress: Progress) -> int:
    try:
        with exclusive_host(command_line(), allow_busy, ignore_servers=dsn_only, wait_s=host_wait):
            done = run_both(scenario, profile, sides, parent, case_pattern, ab, out_dir, progress, runner_class,
                            setup_sql)
    except KeyboardInterrupt:
        click.echo("interrupted: both servers were shut down; nothing was judged", err=True)
        return EXIT_INTERRUPTED
    verdict = done.verdict.model_copy(update={"report_file": str(report_file)}) if report_file else done.verdict
    return _verdict_out(done.report, verdict, report_file, json_out)
