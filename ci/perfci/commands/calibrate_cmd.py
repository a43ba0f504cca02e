"""`perfci calibrate`: interleaved A/A runs that learn this runner's noise, and what
that noise lets a verdict see."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from perfci.commands import options
from perfci.host.hostlock import command_line, exclusive_host
from perfci.judge import calibration, design, resample
from perfci.judge.burst_verdicts import judged_specs, pair_table
from perfci.judge.paired import default_priors
from perfci.model.bursts import BURSTS_FILE, InterleavedRun
from perfci.model.noise import InstancePrior, NoiseModel
from perfci.report.table import table
from perfci.run.steps import utc_now
from perfci.sessions.interleave import DEFAULT_WARMUP_PAIRS, plan_sides, run_interleaved
from perfci.sessions.rounds import Side
from perfci.sessions.session import handle_cancellation
from perfci.store import noise_files
from perfci.util.errors import EXIT_INTERRUPTED
from perfci.util.files import write_atomic
from perfci.util.progress import Progress


@click.command()
@click.argument("scenario")
@click.option("--server", "server_spec", default="local", show_default=True, metavar="SPEC",
              help="The server to calibrate (a spec or a servers.yaml id); both A/A sides run it.")
@options.profile
@click.option("--rounds", type=click.IntRange(2, 50), default=3, show_default=True,
              help="Interleaved A/A runs (each starts both servers from the dataset afresh).")
@click.option("--bursts", type=click.IntRange(3, 100000), default=None,
              help="Burst pairs per phase (default: the profile's).")
@click.option("--case", "case_pattern", default=None, metavar="PATTERN",
              help="Matrix scenarios: the case to calibrate (glob; default: the profile's first case).")
@click.option("--noise-dir", type=click.Path(path_type=Path), default=None,
              help="Where noise models are kept (default: baselines/noise of the project).")
@click.option("--minutes", type=click.FloatRange(1, 600), default=30, show_default=True,
              help="The A/B length (minutes of measured bursts) the minimum detectable effects are given for.")
@click.option("--pairs", type=click.IntRange(6, 100000), default=None,
              help="Give the A/B figures for this many burst pairs per phase instead of --minutes.")
@click.option("--simulate", "trials", type=click.IntRange(0, 100000), default=1000, show_default=True,
              help="Simulated A/Bs per effect (0: none): the measured bursts resampled through the real verdict code.")
@click.option("--from", "from_files", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Learn from these A/A burst files (*.bursts.json) instead of running.")
@options.measure
@options.work_counter
@options.out_dir
@options.workdir
@options.runner_class
@options.host_wait
@options.quiet
def calibrate(scenario: str, server_spec: str, profile: str, rounds: int, bursts: int | None,
              case_pattern: str | None, noise_dir: Path | None, minutes: float, pairs: int | None, trials: int,
              from_files: tuple[Path, ...], measure: str, work_counter: str, out_dir: Path, workdir: Path | None,
              runner_class: str, host_wait: float, quiet: bool) -> int:
    """Learn the noise of SCENARIO on this runner from interleaved A/A runs and print
    the smallest effect a verdict can see at 90 % power, per metric.

    \b
    Example:
      perfci calibrate rebuild-after-delete --rounds 3 --bursts 30
      perfci calibrate microbench --measure work   (the model `perfci ab --measure work` sizes with)
    A calibration measures: it refuses a busy host (no --allow-busy).
    Exit codes: 0 model written, 2 bad input, 3 infrastructure or internal error (also: host busy)."""
    handle_cancellation()
    progress = Progress(quiet=quiet)
    if from_files:
        runs = [BURSTS_FILE.load(p) for p in from_files]
        if len({r.measure for r in runs}) > 1:
            raise click.UsageError("--from: timed and counted (--measure work) A/As are two noise models; "
                                   "give the files of one kind")
    else:
        [spec] = options.check_inputs(scenario, profile, server_spec)
        sides = (Side("a", spec, []), Side("b", spec, []))
        parent = Path(workdir or tempfile.gettempdir())
        runs = []
        try:
            with exclusive_host(command_line(), allow_busy=False, wait_s=host_wait):
                for r in range(rounds):
                    progress.info(f"== A/A {r + 1} of {rounds}")
                    plans = plan_sides(scenario, profile, sides, parent, case_pattern, bursts,
                                       work_counter=work_counter if measure == "work" else None)
                    run = run_interleaved(plans, sides, progress, runner_class, bursts)
                    out_dir.mkdir(parents=True, exist_ok=True)
                    write_atomic(out_dir / f"{run.id}.bursts.json", json.dumps(run.dump(), indent=1) + "\n")
                    runs.append(run)
        except KeyboardInterrupt:
            click.echo("interrupted: both servers were shut down; no noise model written", err=True)
            return EXIT_INTERRUPTED
    model = calibration.learn(runs, utc_now())
    path = noise_files.save(model, noise_files.noise_root(noise_dir))
    pairs = pairs or calibration.pairs_in(model, minutes)
    click.echo(report(model, runs[0], path))
    if trials and model.measure == "work":
        click.echo("(no simulated A/Bs: they put a slowdown on throughput, which a counting A/B does not measure)")
    elif trials:  # as `perfci ab` judges: its default instance pairs, the learned spread between them
        click.echo(simulated(runs, pairs, trials, AB_INSTANCES,
                             calibration.floored_priors(default_priors(model.metrics), model.priors())))
    return 0


SIMULATED_EFFECTS = (0.0, 0.02, 0.05, 0.10)
AB_INSTANCES = 2  # `perfci ab --instances` default


def report(model: NoiseModel, run: InterleavedRun, path: Path) -> str:
    specs = judged_specs(pair_table(run), [])
    lines = [f"## perfci calibrate: {model.scenario} · {model.profile} · {model.server_line} · runner {model.runner_class}",
             "", f"- {len(model.runs)} interleaved A/A runs on `{model.host}` · model written to `{path}`",
             f"- minimum detectable effect at 90 % power: nightly = one run against a {calibration.NIGHTLY_BASELINE_RUNS}-run "
             f"baseline; A/B = the sized A/B below (instance pairs included, Holm's first step over the judged "
             f"metrics, its interim look counted: judge/design.py, the MDE `perfci ab` states)",
             ""]

    def pct(x: float | None) -> str:
        return f"{x:.2%}" if x is not None else "–"

    keys = [k for k in model.metrics if k in specs] + sorted(
        k for k in model.metrics if k not in specs and (model.metrics[k].run_cv or 1) <= 0.005)
    phases = len({k.split(".", 1)[0] for k in specs}) or 1
    per_phase = max(1, round(len(specs) / phases))
    target = design.WORK_TARGET_MDE if model.measure == "work" else design.DEFAULT_TARGET_MDE
    sized = design.for_case(model, phases, per_phase, DEFAULT_WARMUP_PAIRS, target, measure=model.measure)
    lines[-1:-1] = [f"- sized A/B (the nightly's A/B against its reference, and `perfci ab` with no size option), "
                    f"for {sized.target:.0%} within {sized.budget_minutes:g} min on this model: {sized.describe()}"]
    lines += table(["metric", "pair sd", "lag-1", "run CV", "nightly MDE (one run)", "A/B MDE (sized)",
                    "compare tolerance"], (
        [f"`{key}`{' (judged)' if key in specs else ''}", pct(m.pair_sd), f"{m.lag1:+.2f}", pct(m.run_cv),
         pct(calibration.nightly_mde(m)),
         pct(design.mde(design.key_noise(key, m), sized.instances, sized.bursts, phases * per_phase)),
         pct(calibration.tolerance(m))]
        for key, m in ((k, model.metrics[k]) for k in keys)))
    lines += ["", f"Counters with a run CV <= 0.5 % are listed after the judged metrics (deterministic under fixed work); "
                  f"{len(model.metrics)} metrics in the model.", ""]
    return "\n".join(lines)


def simulated(runs: list[InterleavedRun], pairs: int, trials: int, instances: int = 2,
              priors: dict[str, InstancePrior] | None = None) -> str:
    """The same A/B shape through the real verdict code, fed with the measured bursts."""
    rates = [resample.simulate(runs, effect, pairs, trials, instances=instances, priors=priors)
             for effect in SIMULATED_EFFECTS]
    phases = list(rates[0].detected)
    lines = [f"### Simulated A/Bs: {trials} per row, {instances} instance pairs × {rates[0].pairs} pairs per phase, "
             f"from the {rates[0].pool} instance pairs of {len(runs)} A/A runs", "",
             f"Assumed: {resample.ASSUMPTIONS}.", "",
             *table(["slowdown on B", "any judged regression", "any judged flag", *(f"`{p}.tps` flagged" for p in phases)],
                    ([f"{r.effect:.0%}", f"{r.any_regression:.1%}", f"{r.any_flag:.1%}",
                      *(f"{r.detected[p]:.1%}" for p in phases)] for r in rates))]
    lines += ["", "A slowdown is put on B's throughput and latency only (a CPU cost, no extra work); "
                  "at 0 % the first columns are the family-wise false-alarm rate of one A/B.", ""]
    return "\n".join(lines)
