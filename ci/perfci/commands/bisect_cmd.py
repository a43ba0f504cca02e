"""`perfci bisect`: which release between two made a case slower (judge/bisect.py)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import tempfile
import time
from pathlib import Path

import click

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.judge.bisect import Bisection, Step, bisect, bisect_steps, step_of
from perfci.judge.burst_verdicts import TIME_METRICS
from perfci.judge.paired import ALPHA
from perfci.model.metrics import WORK_METRIC
from perfci.model.outputs import BisectRecord, BisectStep
from perfci.model.scenario import cases, load_scenario, only_phases
from perfci.providers.basedirs import build_line
from perfci.providers.servers import load_servers, resolve_server
from perfci.providers.spec import ServerSpec, parse_spec
from perfci.report.opening import bisect_opening
from perfci.sessions.session import handle_cancellation
from perfci.sessions.sized_ab import AbPlan, cost_line, run_sized, sides_of
from perfci.util.errors import EXIT_INTERRUPTED, EXIT_REGRESSION, BadInput
from perfci.util.files import write_atomic
from perfci.util.progress import Progress
from perfci.util.text import markdown


def check_phases(scenario: str, profile: str, case_pattern: str | None, phases: tuple[str, ...]) -> None:
    """The scenario and profile exist and every --phase is a measure phase of the case:
    exit 2 before anything is built or measured."""
    loaded, path = load_scenario(scenario)
    only_phases(cases(loaded, profile, str(path), [case_pattern] if case_pattern else None)[0], phases)


def commit_ends(good: str, bad: str) -> list[ServerSpec] | None:
    """Both ends' build: specs when the bisect walks commits, None when it walks
    servers.yaml's releases: mixed ends are bad input, refused before the host is claimed."""
    specs = [parse_spec(resolve_server(end, option=option).spec) for end, option in ((good, "--good"), (bad, "--bad"))]
    builds = [s.scheme == "build" for s in specs]
    if any(builds) and not all(builds):
        raise BadInput(f"--good {good!r} --bad {bad!r}: both ends are build: specs (a bisect over commits) "
                       "or both servers.yaml releases")
    return specs if all(builds) else None


def release_line(good: str, bad: str) -> tuple[list[str], list[str]]:
    """What a bisect over releases walks, oldest first, and how its log lists it."""
    releases = load_servers().releases_from(good, bad)
    return releases, [f"Releases in order: {', '.join(releases)}"]


def commit_line(ends: list[ServerSpec]) -> tuple[list[str], list[str]]:
    """What a bisect over commits walks (--good's commit, then --bad's first-parent line
    after it) and how its log lists it: fetched into the shared source tree, so under the
    host lock."""
    commits = build_line(*ends)
    flavor = ends[0].flavor
    return ([c.spec(flavor) for c in commits],
            ["Commits in order (first parent):", "", *[f"- `{c.sha[:12]}` {markdown(c.subject)}" for c in commits]])


def culprit_why(found: Bisection, whys: dict[tuple[str, str], str]) -> list[str]:
    """The explain pass of the step that names the first slower release, if it ran."""
    why = whys.get((found.last_good or "", found.first_bad or ""))
    return [f"### Why {found.first_bad} is slower than {found.last_good}: {why}", ""] if why else []


@click.command()
@click.argument("scenario")
@click.option("--good", required=True, metavar="ID|SPEC",
              help="A release known not to be slow (servers.yaml id), or a build:FLAVOR@GIT_REF.")
@click.option("--bad", required=True, metavar="ID|SPEC",
              help="A later release known to be slower, or a later build:FLAVOR@GIT_REF of the same flavor.")
@click.option("--metric", default=None,
              help="What 'slower' means: this judged metric in any phase (e.g. tps, qps, statement_cpu_us_per_txn) "
                   "[default: tps; instructions_per_txn with --measure work].")
@click.option("--case", "case_pattern", default=None, metavar="PATTERN", help="Matrix scenarios: the case.")
@options.ab_phases
@options.profile
@click.option("--retries", type=click.IntRange(0, 5), default=1, show_default=True,
              help="An inconclusive step is measured again this many times before the search stops there.")
@options.ab_plan_options
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("bisect"), show_default=True,
              help="bisect-<scenario>-<stamp>.jsonl (one line per step) and .md, and every A/B's bursts and report.")
@options.workdir
@options.runner_class
@options.host_wait
@options.quiet
@options.json_output("bisect")
def bisect_command(scenario: str, good: str, bad: str, metric: str | None, case_pattern: str | None,
                   phases: tuple[str, ...], profile: str, retries: int, ab: AbPlan, out_dir: Path,
                   workdir: Path | None, runner_class: str, host_wait: float, quiet: bool,
                   json_out: Path | None) -> int:
    """Which release from --good to --bad (servers.yaml's releases of one flavor, in
    version order) first made SCENARIO slower: the ends A/B'd first, then each
    midpoint against the good end, an inconclusive step measured again (still
    inconclusive: the bad end against the midpoint, to see whether the rest is after
    it); says "first slower in X (B/A ...); Y was not", or that the slowdown is spread
    over several releases (each step below what one A/B sees, the ends apart beyond it).
    When both ends are build: specs (or ids whose spec is one), it walks the commits
    instead: --good's, then every commit on --bad's first-parent line after it, each
    step built by scripts/build-server (cached per commit).

    \b
    Examples:
      perfci bisect microbench --good mysql-8.0.15 --bad mysql-8.0.31 --metric qps
      perfci bisect microbench --good mysql-5.7.22 --bad mysql-8.0.31 --metric qps --phase full-scan
      perfci bisect microbench --good build:mysql@mysql-8.0.30 --bad build:mysql@mysql-8.0.31
    Exit codes: 0 the ends are not judged apart, 1 they are (the summary says whether
    one release, a spread or an undecided stretch), 2 bad input, 3 infrastructure or
    internal error."""
    handle_cancellation()
    counted = ab.measure == "work"
    metric = metric or (WORK_METRIC if counted else "tps")
    if counted and metric in TIME_METRICS:  # nothing is timed under a counter: every step would be undecided
        raise click.UsageError(f"--metric {metric} is a time metric: --measure work judges {WORK_METRIC} "
                               "(or a work counter per transaction)")
    check_phases(scenario, profile, case_pattern, phases)
    ends = commit_ends(good, bad)
    releases_known = None if ends else release_line(good, bad)  # bad input exits 2 before the host is claimed
    progress = Progress(quiet=quiet)
    parent = Path(workdir or tempfile.gettempdir())
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    log = out_dir / f"bisect-{Path(scenario).stem}-{stamp}.jsonl"
    out_dir.mkdir(parents=True, exist_ok=True)

    whys: dict[tuple[str, str], str] = {}  # a step's explain pass, by (reference, candidate)

    def measure(reference: str, candidate: str) -> Step:
        progress.info(f"== bisect step: {candidate} against {reference}")
        done = run_sized(scenario, profile, sides_of(reference, candidate), parent, case_pattern, ab,
                         out_dir / "ab", progress, runner_class)
        step = step_of(reference, candidate, done.rows, metric)
        if why := done.why:
            whys[(reference, candidate)] = why
        with log.open("a") as f:
            f.write(json.dumps({**dataclasses.asdict(step), "metric": metric, "phases": list(phases),
                                "sizing": done.sizing, "bursts_file": str(done.bursts_file),
                                "explain_dir": str(done.explain_dir) if done.explain_dir else None}) + "\n")
        progress.info(f"   {step.line()}")
        return step

    try:
        with exclusive_host(command_line(), allow_busy=False, wait_s=host_wait):
            releases, listing = releases_known or commit_line(ends or [])
            progress.info(f"bisect over {len(releases)}: {', '.join(releases)}")
            progress.info(cost_line("the bisect", *bisect_steps(len(releases), retries), ab))
            found = bisect(releases, measure, retries=retries)
    except KeyboardInterrupt:
        click.echo(f"interrupted: both servers were shut down; the steps so far are in {log}", err=True)
        return EXIT_INTERRUPTED
    judged = f"{metric} in {', '.join(phases)}" if phases else metric
    again = shlex.join(["perfci", "bisect", scenario, "--good", good, "--bad", bad, "--metric", metric,
                        "--profile", profile, *(["--measure", "work"] if counted else []),
                        *(["--case", case_pattern] if case_pattern else []), *[x for p in phases for x in ("--phase", p)]])
    opening = bisect_opening(found, metric, ab.alpha if ab.alpha is not None else ALPHA, again)
    text = "\n".join([f"## perfci bisect: {scenario} · profile {profile} · {judged}", "",
                      *(f"- {line}" for line in opening), "",
                      f"**{found.summary()}**", "", *listing, "", "Steps:", "",
                      *[f"{i}. {s.line()}" for i, s in enumerate(found.steps, 1)], "", f"Log: {log}", "",
                      *culprit_why(found, whys)])
    write_atomic(log.with_suffix(".md"), text)
    options.text_out(json_out)(text)
    options.emit_json(BisectRecord(
        scenario=scenario, profile=profile, metric=metric, phases=list(phases), good=good, bad=bad,
        summary=found.summary(), ends_apart=found.ends_apart, first_bad=found.first_bad, last_good=found.last_good,
        spread_between=list(found.spread_between) if found.spread_between else None,
        undecided_between=list(found.undecided_between) if found.undecided_between else None,
        steps=[BisectStep(reference=s.reference, candidate=s.candidate, verdict=s.verdict, ratio=s.ratio, low=s.low,
                          high=s.high, mde=s.mde) for s in found.steps], log=str(log)).dump(), json_out)
    return EXIT_REGRESSION if found.ends_apart else 0  # (also when where it happened stayed undecided)
