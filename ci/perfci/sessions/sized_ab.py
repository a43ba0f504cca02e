"""An interleaved A/B sized for the effect it must see: plan both sides, size the run
(judge/design.py) from the case's noise model, run it with its sequential look,
judge it, keep its bursts and report. `perfci ab` and the nightly's reference A/B
(sessions/confirm.py) both run through here."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from perfci.judge import calibration, design
from perfci.judge.burst_verdicts import interim_look, judge_run
from perfci.judge.paired import ALPHA, DEFAULT_MIN_EFFECT, PairedVerdict
from perfci.judge.profile_diff import PhaseFindings, explain_findings
from perfci.judge.work_profile import PhaseShift, phase_shift
from perfci.model.ab_verdict import AbVerdict, Pilot, Sizing
from perfci.model.bursts import InterleavedRun
from perfci.model.identity import server_line
from perfci.model.metrics import WORK_METRIC
from perfci.model.noise import NoiseModel
from perfci.model.scenario import MeasureStep
from perfci.model.verdicts import Outcome
from perfci.providers.servers import resolve_server
from perfci.report import flamegraphs
from perfci.report.explanation import FLAMES_AT, why_body, with_heading
from perfci.report.interleaved import interleaved_markdown, verdict_record
from perfci.report.opening import with_opening
from perfci.report.work_why import work_why_body
from perfci.run.plan import RunPlan
from perfci.sessions.explain_pass import ExplainPass, explain_dir, run_explain_pass
from perfci.sessions.interleave import DEFAULT_WARMUP_PAIRS, SideServer, plan_sides, run_interleaved
from perfci.sessions.rounds import Side
from perfci.store import noise_files
from perfci.util.errors import InfraFailure
from perfci.util.files import write_atomic
from perfci.util.progress import Progress
from perfci.util.text import code_span, markdown

PROFILE_INSTANCES = 2  # --size profile: the quick A/B (the profile's bursts, two instance pairs)


@dataclass(frozen=True)
class AbPlan:
    """Everything an interleaved A/B is sized and judged by, decided once from the
    options (commands/options.py `ab_plan`) and handed down unchanged by every command
    that runs one (ab, confirm, sweep, bisect; the nightly's reference A/B is confirm's):
    the effect it must see within a time budget, or (`by_profile`) the profile's burst
    count on two instance pairs; `bursts` / `instances` given fix that dimension; the
    smallest change it flags; where the case's noise model is looked up (for the size
    and for the verdict's between-instance spread: the same model, found once)."""
    target: float = design.DEFAULT_TARGET_MDE
    budget_minutes: float = design.DEFAULT_BUDGET_MINUTES
    by_profile: bool = False
    bursts: int | None = None      # burst pairs per phase, warm-up included (as --bursts); None: sized
    instances: int | None = None
    warmup: int = DEFAULT_WARMUP_PAIRS
    phases: tuple[str, ...] = ()   # measure, size and judge only these phases (--phase)
    min_effect: float = DEFAULT_MIN_EFFECT
    noise_dir: Path | None = None  # noise models (perfci calibrate); None: the project's baselines/noise
    explain: str = "auto"          # the explain pass: auto (regressed phases), always (every phase), never
    alpha: float | None = None     # family-wise level; None: ALPHA (a person's A/B); the nightly's: its budget share
    measure: str = "time"          # time: throughput, latency, CPU; work: instructions per transaction, counted
    work_counter: str = "auto"     # how work is counted (run/work.py): auto (the PMU where there is one), callgrind, pmu

    @property
    def noise_root(self) -> Path:
        return noise_files.noise_root(self.noise_dir)

    @property
    def counting(self) -> str | None:
        """The work counter the sides count with (None: they are timed)."""
        return self.work_counter if self.measure == "work" else None

    @property
    def measured_bursts(self) -> int | None:
        """--bursts without the warm-up: what the size counts (None: sized)."""
        return self.bursts - self.warmup if self.bursts else None


def cost_line(what: str, least: int, most: int, ab: AbPlan) -> str:
    """What a command of several A/Bs may cost, said before it starts (#57: costs in the
    open): `least` to `most` A/Bs, each sized within --budget-minutes (an A/B clear at its
    interim look stops sooner; one whose plan is over the budget says so itself)."""
    count = f"{least}" if least == most else f"{least}-{most}"
    minutes = f"{most * ab.budget_minutes:g}" if least == most else \
        f"{least * ab.budget_minutes:g}-{most * ab.budget_minutes:g}"
    return (f"{what}: {count} A/B{'s' if most > 1 else ''}, each sized within {ab.budget_minutes:g} min: "
            f"up to about {minutes} min (an A/B clear at its interim look stops sooner)")


@dataclass(frozen=True)
class Sized:
    """An A/B planned and sized, before any server starts: both sides' run plans, the
    size, and the noise model both were taken from (None: the runner defaults)."""
    plans: list[RunPlan]
    design: design.Design
    noise_model: NoiseModel | None
    model_note: str | None = None  # why a noise model found was not used


@dataclass
class SizedAB:
    run: InterleavedRun
    rows: list[PairedVerdict]
    design: design.Design
    report: str
    bursts_file: Path
    explain_dir: Path | None = None  # the explain pass's directory, when one ran
    verdict: AbVerdict | None = None  # the same verdict, typed (perfci ab --json)
    pilot: Pilot | None = None  # the internal pilot's re-size, when it made one

    @property
    def size(self) -> Sizing:
        """How it was sized before it ran, and what the internal pilot changed, typed."""
        return self.design.record(self.pilot)

    @property
    def sizing(self) -> str:
        return self.size.said()

    @property
    def regressions(self) -> list[str]:
        return [r.key for r in self.rows if r.verdict == Outcome.REGRESSION]

    @property
    def why(self) -> str | None:
        """The Why, typed (the verdict's), never cut out of the report."""
        return self.verdict.why if self.verdict else None


def sides_of(a: str, b: str) -> tuple[Side, Side]:
    """Side A and side B of two servers (servers.yaml ids or specs), no overrides."""
    return Side("a", resolve_server(a).spec, []), Side("b", resolve_server(b).spec, [])


def noise_model_for(plan: RunPlan, runner_class: str, root: Path,
                    measure: str = "time") -> tuple[NoiseModel | None, str | None]:
    """The case's noise model for side A's server line, if calibrate learned one on this
    case as it is now (a --phase A/B uses the whole case's model); and why a model found
    is not used."""
    identity = plan.provider.identity
    r = plan.resolved
    return noise_files.find_current(root, runner_class, server_line(identity.flavor, str(identity.version)), r.name,
                                    r.profile, r.case, plan.case_hashes, measure)


def measured_phases(plans: list[RunPlan]) -> list[str]:
    """The phases side B's plan measures, in the scenario's order."""
    return [s.phase for s in plans[1].resolved.steps if isinstance(s, MeasureStep)]


def judged_per_phase(plans: list[RunPlan]) -> int:
    return len(plans[1].resolved.compare) or design.DEFAULT_JUDGED_PER_PHASE


def size_of(plans: list[RunPlan], ab: AbPlan, model: NoiseModel | None,
            only: tuple[str, ...] | None = None) -> design.Design:
    """The A/B's size from its plans; `only`: as if it ran these of their phases."""
    resolved = plans[1].resolved
    measured = set(only) if only else set(measured_phases(plans))
    phases = len(measured)
    judged = judged_per_phase(plans)
    bursts = ab.measured_bursts
    if ab.by_profile:
        counts = [resolved.workload.model_copy(update={"transactions": s.transactions or resolved.workload.transactions})
                  .bursts()[1] for s in resolved.steps if isinstance(s, MeasureStep) and s.phase in measured]
        bursts = bursts or max(max(counts, default=10) - ab.warmup, 2)
        return design.for_case(model, phases, judged, ab.warmup, ab.target, float("inf"),
                               ab.instances or PROFILE_INSTANCES, bursts, fixed="--size profile", measured=measured,
                               alpha=ab.alpha or ALPHA, measure=ab.measure)
    return design.for_case(model, phases, judged, ab.warmup, ab.target, ab.budget_minutes, ab.instances,
                           bursts, fixed=" and ".join(f for f, given in (("--instances", ab.instances),
                                                                         ("--bursts", ab.bursts)) if given) or None,
                           measured=measured, alpha=ab.alpha or ALPHA, measure=ab.measure)


def stop_early(run: InterleavedRun, compare, ab: AbPlan, size: design.Design, model: NoiseModel | None,
               elapsed_s: float) -> tuple[Literal["interim", "budget"], str] | None:
    """After an instance pair: a regression clear at the interim look, or a budget the
    next pair would overrun (a size the options fixed is run whole)."""
    why = clear_at_interim(run, compare, ab.min_effect, model)
    if why:
        return "interim", why
    over = None if size.fixed else design.past_budget(len(run.instances), run.planned_instances or size.instances,
                                                      elapsed_s, size.budget_minutes)
    return ("budget", over) if over else None


def clear_at_interim(run: InterleavedRun, compare, min_effect: float, model: NoiseModel | None) -> str | None:
    """At the interim look (half the planned instance pairs, 4 or more planned): a
    judged regression at the interim level ends the A/B (judge/burst_verdicts.py)."""
    if len(run.instances) != interim_look(run.planned_instances or 0):
        return None
    priors, _ = calibration.priors_for(run, model)
    worse = [r.key for r in judge_run(run, compare, min_effect, priors=priors) if r.verdict == Outcome.REGRESSION]
    return f"regression already clear at the interim look ({', '.join(worse)})" if worse else None


def plan_and_size(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None,
                  ab: AbPlan, runner_class: str) -> Sized:
    """Every input check, the noise model and the size, before any server starts."""
    plans = plan_sides(scenario, profile, sides, parent, case, ab.bursts, ab.phases, ab.counting)
    model, note = noise_model_for(plans[0], runner_class, ab.noise_root, ab.measure)
    return Sized(plans, size_of(plans, ab, model), model, note)


def run_sized(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None, ab: AbPlan,
              out_dir: Path, progress: Progress, runner_class: str,
              setup_sql: tuple[list[str], list[str]] = ([], []), sized: Sized | None = None) -> SizedAB:
    planned = sized or plan_and_size(scenario, profile, sides, parent, case, ab, runner_class)
    size = planned.design
    if planned.model_note:
        progress.info(planned.model_note)
    progress.info(f"A/B sized: {size.describe()}")
    bursts = size.bursts + ab.warmup  # the run counts burst pairs with the warm-up
    compare = planned.plans[1].resolved.compare
    explained: list[ExplainPass] = []

    def explain_last_pair(partial: InterleavedRun, servers: list[SideServer], first: int) -> None:
        phases, reason = explain_phases(partial, compare, ab, planned.noise_model)
        if not phases:
            return
        try:
            explained.append(run_explain_pass(servers, phases, partial, reason, out_dir, progress, first))
        except (InfraFailure, OSError) as failure:  # the verdict stands without its explanation
            progress.info(f"explain pass failed, the verdict stands: {failure}")
            failed.append(str(failure))

    failed: list[str] = []
    started = time.monotonic()
    measured = measured_phases(planned.plans)
    noises = design.sized_noises(planned.noise_model, set(measured), ab.measure)
    pilots: list[Pilot] = []

    def internal_pilot(partial: InterleavedRun) -> int | None:
        found = design.pilot(partial, size, noises, len(measured) * judged_per_phase(planned.plans),
                             time.monotonic() - started, ab.alpha or ALPHA)
        if found is None:
            return None
        pilots.append(found)
        progress.info(found.said(size.target))
        return found.instances

    run = run_interleaved(planned.plans, sides, progress, runner_class, bursts, ab.warmup, setup_sql,
                          instances=size.instances, resize=internal_pilot,
                          replan=lambda: plan_sides(scenario, profile, sides, parent, case, bursts, ab.phases,
                                                    ab.counting),
                          stop=lambda partial: stop_early(partial, compare, ab, size, planned.noise_model,
                                                          time.monotonic() - started),
                          last_pair=explain_last_pair, alpha=ab.alpha)
    out_dir.mkdir(parents=True, exist_ok=True)
    bursts_file = out_dir / f"{run.id}.bursts.json"
    write_atomic(bursts_file, json.dumps(run.dump(), indent=1) + "\n")
    priors, prior_source = calibration.priors_for(run, planned.noise_model)
    rows = judge_run(run, compare, ab.min_effect, priors=priors)
    sizing = size.record(pilots[0] if pilots else None)
    text = interleaved_markdown(run, rows, ab.min_effect, instance_source=prior_source, sizing=sizing.said())
    directory = explain_dir(out_dir, run.id) if explained else None
    why: str | None = None
    where = ""  # where the flame graphs are on this host: the report's, never the typed Why's (a path here)
    why_line = None
    if explained and directory is not None:
        done = explained[0]
        findings = explain_findings(done.run, done.folded)
        why, why_line = why_body(done.run, findings), sampled_why_line(findings)
        where = FLAMES_AT.format(link=code_span(str(directory)))
    elif failed:
        why = f"The explain pass failed (the verdict above stands): {markdown(failed[0])}\n"
    elif shifts := counted_shifts(run, rows, ab.explain):
        directory, where = counted_flamegraphs(run, [s.phase for s in shifts], out_dir)
        why, why_line = work_why_body(shifts), counted_why_line(shifts)
    if why is not None:
        text += "\n" + with_heading(why) + (f"\n{where}\n" if where else "")
    verdict = verdict_record(run, rows, sizing, why.strip() if why else None,
                             str(directory) if directory else None,
                             str(out_dir / f"{run.id}.md"), str(bursts_file), why_line=why_line)
    text = with_opening(text, verdict)
    write_atomic(out_dir / f"{run.id}.md", text)
    return SizedAB(run, rows, size, text, bursts_file, directory, verdict, pilots[0] if pilots else None)


def sampled_why_line(findings: list[PhaseFindings]) -> str | None:
    """The explain pass's Why in one line: the function whose own CPU moved most where it stood out."""
    moved = [(f.phase, r) for f in findings if f.profiled and f.symbols
             for r in f.functions if r.stands_out and r.kind == "self"]
    if not moved:
        return quiet_explain_line(findings)
    phase, top = max(moved, key=lambda x: abs(x[1].delta))
    return f"{code_span(top.name)} {top.delta:+.1f} {top.unit} of server CPU in {markdown(phase)} (sampled by perf)"


def quiet_explain_line(findings: list[PhaseFindings]) -> str | None:
    """The explain pass profiled but no function stood out: said so, with the server CPU
    its few bursts saw (not "no explain pass ran")."""
    profiled = [f for f in findings if f.profiled and "a" in f.cpu_us and "b" in f.cpu_us and f.cpu_us["a"]]
    if not profiled:
        return None
    seen = ", ".join(f"{(f.cpu_us['b'] / f.cpu_us['a'] - 1):+.1%} server CPU per transaction in {markdown(f.phase)}"
                     for f in profiled)
    bursts = max(f.bursts for f in profiled)
    return (f"the explain pass ({bursts} profiled burst pairs) saw {seen}; no function stood out beyond those "
            "bursts' noise")


def counted_why_line(shifts: list[PhaseShift]) -> str | None:
    """The counted Why in one line: the function whose own instructions moved most."""
    moved = [(s, f) for s in shifts for f in s.functions[:1]]
    if not moved:
        return None
    s, top = max(moved, key=lambda x: abs(x[1].delta))
    share = f" ({top.delta / s.delta:.0%} of its change)" if s.delta else ""
    return (f"{code_span(top.name)} {top.delta:+,.0f} instructions per transaction in {markdown(s.phase)}{share} "
            "(counted by callgrind)")


def counted_flamegraphs(run: InterleavedRun, phases: list[str], out_dir: Path) -> tuple[Path | None, str]:
    """The counted Why's flame graphs (report/flamegraphs.py `counted`) in the run's explain
    directory, and a line for the report: where they are, or why there are none."""
    if not run.work_calls:
        return None, ""
    directory = explain_dir(out_dir, run.id)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        for phase in phases:
            flamegraphs.counted(run, phase, directory)
    except InfraFailure as failure:
        return directory, f"No flame graphs: {markdown(str(failure))}."
    return directory, (f"Flame graphs of each side and B against A (red: more instructions on B), per phase: "
                       f"{code_span(str(directory))} (`PHASE-diff.svg`; {flamegraphs.ESTIMATED}).")


def counted_shifts(run: InterleavedRun, rows: list[PairedVerdict], explain: str) -> list[PhaseShift]:
    """A counted A/B's Why, from the function counts its bursts already have (no extra
    bursts): the phases whose instructions regressed (auto), every phase (always), none (never)."""
    if run.measure != "work" or explain == "never":
        return []
    worse = {r.key.split(".", 1)[0] for r in rows if r.key.endswith(f".{WORK_METRIC}") and r.verdict == Outcome.REGRESSION}
    phases = [p for p in run.bursts_per_phase if explain == "always" or p in worse]
    return [shift for p in phases if (shift := phase_shift(run, p)) is not None]


def explain_phases(run: InterleavedRun, compare, ab: AbPlan, model: NoiseModel | None) -> tuple[list[str], str]:
    """The phases the explain pass profiles, and why: every measured one (always), the
    ones with a judged regression so far (auto), none (never, and in a counting A/B)."""
    phases = list(run.bursts_per_phase)
    if run.measure == "work":  # its servers run under callgrind: perf would profile valgrind's translations
        return [], ""
    if ab.explain == "always":
        return phases, "asked for: --explain always"
    if ab.explain == "never":
        return [], ""
    priors, _ = calibration.priors_for(run, model)
    worse = [r.key for r in judge_run(run, compare, ab.min_effect, priors=priors) if r.verdict == Outcome.REGRESSION]
    regressed = [p for p in phases if any(key.startswith(f"{p}.") for key in worse)]
    return regressed, f"regression in {', '.join(worse)}"
