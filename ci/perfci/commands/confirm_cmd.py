"""`perfci confirm`: the nightly's A/B against each case's reference (sessions/confirm.py)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import click

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.judge.budget import IssueBudget
from perfci.judge.compare import Rules, compare_cases
from perfci.model.outputs import ConfirmRun
from perfci.model.verdicts import Outcome
from perfci.sessions import culprit_search
from perfci.sessions.confirm import DEFAULT_PROFILE, confirm_case, triggered
from perfci.sessions.session import handle_cancellation
from perfci.sessions.sized_ab import AbPlan, cost_line
from perfci.store import confirmation_files
from perfci.store.case_inputs import load_cases
from perfci.store.results import expand, load_result
from perfci.util.errors import EXIT_INFRA, EXIT_INTERRUPTED, EXIT_REGRESSION
from perfci.util.progress import Progress


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@options.baseline_dir
@click.option("--profile", "-p", default=DEFAULT_PROFILE, show_default=True,
              help="The fixed-work profile the A/B runs (its phases are split into bursts).")
@options.ab_plan_options
@options.issue_budget
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("confirm"), show_default=True,
              help="Where <result id>.confirmation.json and the A/B's bursts are written.")
@click.option("--culprit-minutes", type=click.FloatRange(0), default=culprit_search.DEFAULT_BUDGET_MINUTES,
              show_default=True, envvar="PERFCI_CULPRIT_MINUTES",
              help="A regression confirmed on a build: line (both servers builds of one flavor): bisect the commits "
                   "between the reference and tonight for this long (a step started in time finishes); 0: never.")
@options.workdir
@options.runner_class
@options.host_wait
@options.follow
@options.history
@options.window
@options.quiet
@options.json_output("confirm")
def confirm(results: tuple[Path, ...], baseline_dir: Path | None, profile: str, ab: AbPlan, budget: IssueBudget,
            out_dir: Path,
            culprit_minutes: float, workdir: Path | None, runner_class: str, host_wait: float,
            follow, history_dir: Path | None, window: int, quiet: bool, json_out: Path | None) -> int:
    """A/B each case of RESULTS against its reference, on this runner, before issues
    are opened (`perfci nightly --confirmations`): where tonight regressed against its
    baseline (the A/B confirms it or not), and where tonight's server or config is not
    the reference's (a change far inside the nights' noise is seen that night). The
    reference is the baseline's newest sample (the last accepted night). Each A/B is
    sized for --target-mde within --budget-minutes, at its share of the false-issue budget
    (--false-issues over --cases: a level per case and night, judge/budget.py).

    \b
    Example (nightly, after `perfci compare`):
      perfci confirm results --history results-branch/history --out confirm
    Exit codes: 0 no regression was confirmed (or there was nothing to A/B against: a
    threshold regression stands unconfirmed, its reason recorded), 1 one was confirmed,
    2 bad input, 3 an A/B failed on this runner (recorded; its regression stands) or
    another infrastructure or internal error."""
    handle_cancellation()
    ab = replace(ab, alpha=budget.level("ab"))
    progress = Progress(quiet=quiet)
    loaded = [load_result(p) for p in expand(list(results))]
    comparisons = compare_cases(load_cases(loaded, baseline_root=baseline_dir, follow=follow, noise_dir=ab.noise_dir,
                                         history_root=history_dir, window=window),
                                Rules(follow=follow, noise_dir=ab.noise_dir))
    parent = Path(workdir or tempfile.gettempdir())
    found = []
    if n := triggered(comparisons):
        progress.info(cost_line("tonight's reference A/Bs", n, n, ab)
                      + (f", and up to {culprit_minutes:g} min of commit search for a regression confirmed on a "
                         "build: line" if culprit_minutes else ""))
    try:
        with exclusive_host(command_line(), allow_busy=False, wait_s=host_wait):
            for comp in comparisons:
                c = confirm_case(comp, profile, ab, parent, out_dir, progress, runner_class, culprit_minutes,
                                 history_dir)
                if c is not None:
                    confirmation_files.save(c, out_dir)
                    found.append(c)
    except KeyboardInterrupt:
        click.echo("interrupted: both servers were shut down; the confirmations written so far are kept", err=True)
        return EXIT_INTERRUPTED
    say = options.text_out(json_out)
    if not found:
        say("nothing to A/B: no case regressed, and every case ran its reference's server and config")
    for c in found:
        say(f"{c.case} ({c.trigger}): {c.status} — {c.reason}")
        if c.culprit:
            say(f"{c.case}: culprit search ({c.culprit.metric} in {', '.join(c.culprit.phases)}): {c.culprit.summary}")
        if c.report:
            say(c.report)
    confirmed = any(c.status == "confirmed" for c in found)
    options.emit_json(ConfirmRun(outcome=Outcome.REGRESSION if confirmed else Outcome.UNCHANGED,
                                 failed=any(c.failed for c in found), confirmations=found).dump(), json_out)
    if confirmed:
        return EXIT_REGRESSION
    return EXIT_INFRA if any(c.failed for c in found) else 0
