"""Options several commands share, declared once (name, default, help, env)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from perfci.judge import design
from perfci.judge.budget import DEFAULT_CASES, DEFAULT_FALSE_ISSUES, DEFAULT_MIN_NIGHTS, IssueBudget
from perfci.judge.compare import CaseComparison, Rules
from perfci.judge.paired import DEFAULT_MIN_EFFECT, MIN_MEASURED_PAIRS
from perfci.judge.stats import DEFAULT_CONFIDENCE, DEFAULT_CV_FLOOR, DEFAULT_PRIOR_CV
from perfci.model.identity import DEFAULT_FOLLOW, FOLLOW_CHOICES
from perfci.model.scenario import cases, load_scenario
from perfci.providers.servers import resolve_server
from perfci.report.comparison import record
from perfci.report.csv_tables import COMPARISON_COLUMNS, comparison_rows, to_csv
from perfci.run import work
from perfci.sessions.interleave import DEFAULT_WARMUP_PAIRS
from perfci.sessions.sized_ab import AbPlan
from perfci.store.noise_files import noise_root
from perfci.util.files import write_atomic

F = TypeVar("F", bound=Callable[..., object])
BOTH = "both"  # --measure both: two A/Bs, one counted and one timed (sessions/both_ab.py; perfci ab only)
AUTO = "auto"  # --measure auto: both where this host can count work, else time (perfci ab only)

baseline_dir = click.option(
    "--baseline-dir", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
    help="Baselines root, which must exist (default: baselines/ of the perfci project here or above, or $PERFCI_ROOT).")
baseline_dir_to_write = click.option(
    "--baseline-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
    help="Baselines root (created if missing; default: baselines/ of the perfci project here or above, or $PERFCI_ROOT).")
runner_class = click.option(
    "--runner-class", envvar="PERFCI_RUNNER_CLASS", default="local", show_default=True,
    help="Label of this host's kind (baselines are kept per runner class). Env: PERFCI_RUNNER_CLASS.")
confidence = click.option(
    "--confidence", type=click.FloatRange(0.5, 0.9999), default=DEFAULT_CONFIDENCE, show_default=True,
    help="Two-sided confidence of the ratio interval.")
cv_floor = click.option(
    "--cv-floor", type=click.FloatRange(0, 1), default=DEFAULT_CV_FLOOR, show_default=True,
    help="Smallest run-level coefficient of variation assumed.")
prior_cv = click.option(
    "--prior-cv", type=click.FloatRange(0, 1), default=DEFAULT_PRIOR_CV, show_default=True,
    help="Prior run-level CV (worth two samples) that moderates the measured spread.")
follow = click.option(
    "--follow", type=click.Choice(FOLLOW_CHOICES), default=DEFAULT_FOLLOW, show_default=True,
    help="Key baselines, history and issues by the server's release line (mysql-8.0) or its exact version.")
out_dir = click.option(
    "--out", "out_dir", type=click.Path(path_type=Path), default=Path("results"), show_default=True,
    help="Directory for result files (JSON) and summaries (Markdown).")
workdir = click.option(
    "--workdir", type=click.Path(path_type=Path), default=None,
    help="Where datadirs are created (use the disk under test). Default: the system temp dir.")
report = click.option("--report", "report_file", type=click.Path(path_type=Path),
                      help="Also write the Markdown report here.")
allow_busy = click.option(
    "--allow-busy", is_flag=True, envvar="PERFCI_ALLOW_BUSY",
    help="Measure even when another perfci holds the host lock or a server/sysbench is running "
         "(recorded in the result). Default: refuse, naming what runs.")
host_wait = click.option(
    "--host-wait", type=click.FloatRange(0), default=0, show_default=True, envvar="PERFCI_HOST_WAIT", metavar="SECONDS",
    help="Wait up to SECONDS for the host to be free (another benchmark running) before refusing.")
noise_dir = click.option(
    "--noise-dir", type=click.Path(path_type=Path), default=None,
    help="Noise models from `perfci calibrate` (default: noise/ under --baseline-dir where the command has one, else "
         "baselines/noise of the project): where one matches a case, its tolerances and spreads replace the defaults, "
         "an A/B is sized and judged with it, and every counter it found deterministic is judged too.")
history = click.option(
    "--history", "history_dir", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
    envvar="PERFCI_HISTORY",
    help="History directory (the results branch's history/): a case without a pinned baseline file is judged "
         "against its last --window usable samples there (valid, not excluded, after the last reset). Env: PERFCI_HISTORY.")
window = click.option(
    "--window", type=click.IntRange(2, 1000), default=10, show_default=True,
    help="How many of the newest usable history samples make a baseline (with --history).")
min_nights = click.option(
    "--min-nights", type=click.IntRange(1, 30), default=DEFAULT_MIN_NIGHTS, show_default=True,
    envvar="PERFCI_MIN_NIGHTS",
    help="With --history: open an issue only when a metric regressed on this many consecutive nights (a one-night "
         "spike opens none), or an A/B confirmed it. Fewer than the default spends more of the false-issue budget "
         "than its thresholds' share (docs/nightly.md). Env: PERFCI_MIN_NIGHTS.")
history_to_write = click.option(
    "--history", "history_dir", type=click.Path(path_type=Path, file_okay=False), default=Path("history"),
    show_default=True, envvar="PERFCI_HISTORY", help="History directory (created if missing). Env: PERFCI_HISTORY.")
history_to_read = click.option(
    "--history", "history_dir", type=click.Path(path_type=Path, exists=True, file_okay=False), default=Path("history"),
    show_default=True, envvar="PERFCI_HISTORY", help="History directory, which must exist. Env: PERFCI_HISTORY.")
dry_run = click.option(
    "--dry-run", is_flag=True,
    help="Call no GitHub API: write each issue's Markdown (title, labels, body) under --out instead.")
issues_out = click.option(
    "--out", "issues_out", type=click.Path(path_type=Path, file_okay=False), default=Path("issues"), show_default=True,
    help="With --dry-run: where the issues' Markdown goes (DIR/<fingerprint>.md).")
profile = click.option(
    "--profile", "-p", default="smoke", show_default=True,
    help="The scenario's profile, the scale of the runs: smoke (minutes; tests and PR checks), nightly (~30 min), "
         "seed (the original report's size).")
csv_out = click.option(
    "--csv", "csv_out", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="PATH",
    help="Also write every judged metric as CSV (one row per case and metric: means, change, interval, verdict).")
quiet = click.option("--quiet", "-q", is_flag=True, help="No progress output; print only results and summaries.")


# the false-issue budget (judge/budget.py): confirm (the reference A/B's level), nightly
# (change points, unconfirmed thresholds, what each issue says) and the dashboard
budget_false_issues = click.option(
    "--false-issues", "false_issues", type=click.FloatRange(0, min_open=True), default=DEFAULT_FALSE_ISSUES,
    show_default=True, envvar="PERFCI_FALSE_ISSUES", metavar="N",
    help="The false-issue budget: at most N false issues a month (expected) from one runner when nothing changed, "
         "shared over its cases, nights, reference A/Bs, change points and thresholds; each gets its level from it. "
         "Env: PERFCI_FALSE_ISSUES.")
budget_cases = click.option(
    "--cases", "budget_cases", type=click.IntRange(1), default=DEFAULT_CASES, show_default=True,
    envvar="PERFCI_CASES", metavar="N",
    help="How many cases the nightly runs on one runner (the budget is shared over them). Env: PERFCI_CASES.")


def issue_budget(fn: F) -> F:
    """--false-issues and --cases, handed to the command as one `budget: IssueBudget`."""

    @functools.wraps(fn)
    def with_budget(*args, **kwargs):
        kwargs["budget"] = IssueBudget(kwargs.pop("false_issues"), kwargs.pop("budget_cases"))
        return fn(*args, **kwargs)

    return budget_false_issues(budget_cases(with_budget))  # type: ignore[return-value]


def verdict_rules(fn: F) -> F:
    """--confidence, --cv-floor, --prior-cv and --follow: how verdicts are reached."""
    for option in (follow, prior_cv, cv_floor, confidence):
        fn = option(fn)
    return fn


def check_inputs(scenario: str, profile: str, *server_specs: str) -> list[str]:
    """The inputs a benchmark names, checked before it takes the host lock, so a typo in
    a scenario, a profile or a server is exit 2 at once, even on a busy host. Returns
    the servers' resolved specs."""
    loaded, path = load_scenario(scenario)
    cases(loaded, profile, str(path))  # an unknown profile (or a broken matrix) is BadInput here
    return [resolve_server(spec).spec for spec in server_specs]


def dry_run_dir(dry_run: bool, out: Path) -> Path | None:
    """Where --dry-run writes issues; --out without --dry-run would be silently ignored: refused."""
    source = click.get_current_context().get_parameter_source("issues_out")
    if not dry_run and source is not None and source.name != "DEFAULT":
        raise click.UsageError("--out is where --dry-run writes the issues: give --dry-run too, or drop --out")
    return out if dry_run else None


# how an interleaved A/B is sized (sessions/sized_ab.Aim): `perfci ab` and `perfci confirm`
ab_target = click.option(
    "--target-mde", type=click.FloatRange(0.002, 1), default=None,
    help="The smallest change the A/B must see with 90 % power: it is sized for it (instance pairs x burst pairs) "
         f"from the case's noise model, else this runner class's measured noise [default: "
         f"{design.DEFAULT_TARGET_MDE:.0%} timed, {design.WORK_TARGET_MDE:.0%} with --measure work].")
ab_budget = click.option(
    "--budget-minutes", type=click.FloatRange(1, 1440), default=design.DEFAULT_BUDGET_MINUTES, show_default=True,
    help="The most a sized A/B may take; where the target needs more, the most sensitive size within it "
         "(the report says what it sees).")
ab_size = click.option(
    "--size", "size_by", type=click.Choice(["target", "profile"]), default="target", show_default=True,
    envvar="PERFCI_AB_SIZE",
    help="`profile`: the profile's burst count on two instance pairs (a quick look; the report says what it could "
         "see) instead of sizing for --target-mde. Env: PERFCI_AB_SIZE.")
ab_bursts = click.option(
    "--bursts", type=click.IntRange(3, 100000), default=None,
    help="Interleaved: burst pairs per phase, warm-up included (default: sized).")
ab_phases = click.option(
    "--phase", "phases", multiple=True, metavar="PHASE",
    help="Measure, size and judge only this phase (repeatable; e.g. one microbenchmark of a suite): the A/B is "
         "sized for what that kind of statement's noise allows, not the noisiest phase's.")
ab_instances = click.option(
    "--instances", type=click.IntRange(1, 100), default=None,
    help="Interleaved: instance pairs, each fresh servers from the dataset, its side order drawn at random; what "
         "differs between two instances of a server averages out only over these (default: sized).")
min_effect = click.option(
    "--min-effect", type=click.FloatRange(0, 1), default=DEFAULT_MIN_EFFECT, show_default=True,
    help="Interleaved A/B: the smallest relative change flagged (a smaller significant one is `unchanged`).")
def json_output(kind: str, text: str = "the text then goes to stderr"):
    """--json [PATH], the one convention of every command: into PATH, or to stdout when
    no PATH is given; `perfci schema KIND` is its schema (docs/schema/KIND.schema.json)."""
    return click.option(
        "--json", "json_out", is_flag=False, flag_value="-", default=None, metavar="[PATH]",
        type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
        help=f"The output as JSON (`perfci schema {kind}`): into PATH, or to stdout when no PATH is given ({text}).")


json_out = json_output("ab-verdict", "the Markdown report then goes only to --report")


def emit_json(data: dict, dest: Path | None) -> None:
    """Write a command's JSON where --json says (nothing without it), atomically into a file."""
    if dest is None:
        return
    text = json.dumps(data, indent=1) + "\n"
    if str(dest) == "-":
        click.echo(text, nl=False)
    else:
        write_atomic(dest, text)


def emit_comparison(comparisons: list[CaseComparison], rules: Rules, text: str, report_file: Path | None,
                    csv_out: Path | None, json_out: Path | None) -> None:
    """What `compare` and `diff` write: the report (--report), the CSV (--csv), the JSON
    (--json, `perfci schema comparison`) and the text (stdout, or stderr under --json -)."""
    if report_file:
        write_atomic(report_file, text)
    if csv_out:
        write_atomic(csv_out, to_csv(COMPARISON_COLUMNS, comparison_rows(comparisons)))
    emit_json(record(comparisons, rules).model_dump(mode="json", by_alias=True), json_out)
    text_out(json_out)(text)


def text_out(dest: Path | None):
    """click.echo for a command's text: to stderr when its JSON takes stdout."""
    to_stderr = dest is not None and str(dest) == "-"
    return lambda line="": click.echo(line, err=to_stderr)


explain = click.option(
    "--explain", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
    envvar="PERFCI_EXPLAIN",
    help="Interleaved A/B: after the verdict's bursts, on the last instance pair, profile extra bursts of the "
         "regressed phases (auto), of every measured phase (always: an A/A's 'nothing stands out'), or none: "
         "CPU profiles (perf), statement digests and waits side by side, in the report's Why section "
         "[env PERFCI_EXPLAIN].")
measure = click.option(
    "--measure", type=click.Choice([*work.MEASURES, BOTH, AUTO]), default="time", show_default=True,
    envvar="PERFCI_MEASURE",
    help="Interleaved A/B: what the bursts measure. time: throughput, latency and CPU; work: the instructions the "
         "server's statement path executes per transaction, counted (callgrind, or the PMU on bare metal): "
         "0.1-0.7 % noise where time has several %, blind to waits, locks, cache misses and the host; its bursts "
         "carry no time metric; both (perfci ab): a counting A/B, then a timed one, each in half the budget, and "
         "a verdict that says whether a change is more code or the same work taking longer; auto (perfci ab): both "
         "where this host can count (valgrind, or a PMU), else time [env PERFCI_MEASURE].")
run_measure = click.option(
    "--measure", type=click.Choice(work.MEASURES), default="time", show_default=True,
    help="time: the phases timed natively; work: a counted run, the case's second series (a nightly keeps both): "
         "each measured phase as 2 warm-up and 3 counted bursts of the same seeded transactions every run, under "
         "the counter, its instructions per transaction judged, its times not; loading and "
         "unmeasured steps run natively. Its history and baselines are the case's `<profile>.work` series.")
work_counter = click.option(
    "--work-counter", type=click.Choice(work.WORK_METHODS), default="auto", show_default=True,
    help="--measure work: how instructions are counted. callgrind: the server under valgrind, counting only "
         "inside its statement loop (anywhere); pmu: perf stat's instructions:u of the server process (a host "
         "with hardware counters); auto: the PMU where there is one.")
AB_PLAN_OPTIONS = (ab_target, ab_budget, ab_size, ab_bursts, ab_instances, min_effect, noise_dir, explain, measure,
                   work_counter)


def ab_plan(target_mde: float | None, budget_minutes: float, size_by: str, bursts: int | None, instances: int | None,
            min_effect: float, noise_dir: Path | None, phases: tuple[str, ...] = (),
            warmup: int = DEFAULT_WARMUP_PAIRS, baseline_dir: Path | None = None, explain: str = "auto",
            measure: str = "time", work_counter: str = "auto") -> AbPlan:
    """THE mapping of a command's A/B options to the plan every A/B it runs is sized
    and judged by (sessions/sized_ab.AbPlan). The noise models: --noise-dir, else
    noise/ under the command's --baseline-dir (where they live beside the baselines)."""
    if target_mde is None:  # counted work is ~0.1 % noise: an A/B of it is sized for the 1 % steps of code
        target_mde = design.WORK_TARGET_MDE if measure == "work" else design.DEFAULT_TARGET_MDE
    return AbPlan(target_mde, budget_minutes, size_by == "profile", bursts, instances, warmup, tuple(phases),
                  min_effect, noise_root(noise_dir, baseline_dir), explain, measure=measure, work_counter=work_counter)


def measure_here(work_counter: str) -> str:
    """--measure auto: `both` (the count first, then time) where this host can count work
    with `work_counter`, else `time`; says which on stderr."""
    missing = work.tool_missing(work.choose_method(work_counter))
    click.echo(f"--measure auto: {'time (' + missing + ')' if missing else BOTH}", err=True)
    return "time" if missing else BOTH


def ab_plan_options(fn: F, measure_both: bool = False) -> F:
    """The options that size and judge an interleaved A/B, declared once, handed to the
    command as one `ab: AbPlan` (with its --phase, --warmup and --baseline-dir where it
    has them). `measure_both`: the command runs `--measure both` (the others refuse it)."""
    names = ("target_mde", "budget_minutes", "size_by", "bursts", "instances", "min_effect", "noise_dir", "explain",
             "measure", "work_counter")

    @functools.wraps(fn)
    def with_plan(*args, **kwargs):
        given = {name: kwargs.pop(name) for name in names}
        if given["measure"] in (BOTH, AUTO) and not measure_both:
            raise click.UsageError(f"--measure {given['measure']} is perfci ab's (a counting and a timed A/B): "
                                   "here choose time or work")
        if given["measure"] == AUTO:
            given["measure"] = measure_here(given["work_counter"])
        extra = {name: kwargs.pop(name) if name == "warmup" else kwargs[name]  # the others are the command's too
                 for name in ("phases", "warmup", "baseline_dir") if name in kwargs}
        warmup = extra.get("warmup", DEFAULT_WARMUP_PAIRS)
        if given["bursts"] is not None and given["bursts"] - warmup < MIN_MEASURED_PAIRS:
            measured = max(given["bursts"] - warmup, 0)
            raise click.UsageError(f"--bursts {given['bursts']} counts the warm-up pairs: with --warmup {warmup} "
                                   f"{'no burst pair' if not measured else 'one burst pair'} would be measured "
                                   f"and a verdict needs {MIN_MEASURED_PAIRS} (give --bursts at least "
                                   f"{warmup + MIN_MEASURED_PAIRS})")
        kwargs["ab"] = ab_plan(**given, **extra)
        return fn(*args, **kwargs)

    for option in reversed(AB_PLAN_OPTIONS):
        with_plan = option(with_plan)
    return with_plan  # type: ignore[return-value]


def ab_plan_options_and_both(fn: F) -> F:
    """ab_plan_options for a command that also runs `--measure both` (perfci ab)."""
    return ab_plan_options(fn, measure_both=True)
