"""An interleaved A/B sized for the effect it must see: plan both sides, size the run
(judge/design.py) from the case's noise model, run it with its sequential look,
judge it, keep its bursts and report. `perfci ab` and the nightly's reference A/B
(sessions/confirm.py) both run through here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from perfci.judge import design as design_mod
from perfci.judge import noise
from perfci.judge.bursts import interim_look, judge_run
from perfci.judge.paired import PairedVerdict
from perfci.model.bursts import InterleavedRun
from perfci.model.identity import server_line
from perfci.model.scenario import MeasureStep
from perfci.model.verdicts import Outcome
from perfci.providers.servers import resolve_server
from perfci.report.interleaved import interleaved_markdown
from perfci.run.plan import RunPlan
from perfci.sessions.interleave import DEFAULT_WARMUP_PAIRS, plan_sides, run_interleaved
from perfci.sessions.rounds import Side
from perfci.util.files import write_atomic
from perfci.util.paths import baselines_dir
from perfci.util.progress import Progress

PROFILE_INSTANCES = 2  # --size profile: the quick A/B (the profile's bursts, two instance pairs)


@dataclass(frozen=True)
class Aim:
    """What an A/B is sized for: the effect it must see within a time budget, or
    (`by_profile`) the profile's burst count on two instance pairs; `bursts` /
    `instances` given fix that dimension."""
    target: float = design_mod.DEFAULT_TARGET_MDE
    budget_minutes: float = design_mod.DEFAULT_BUDGET_MINUTES
    by_profile: bool = False
    bursts: int | None = None      # burst pairs per phase, warm-up included (as --bursts)
    instances: int | None = None
    warmup: int = DEFAULT_WARMUP_PAIRS
    phases: tuple[str, ...] = ()   # measure, size and judge only these phases (--phase)


@dataclass
class SizedAB:
    run: InterleavedRun
    rows: list[PairedVerdict]
    design: design_mod.Design
    report: str
    bursts_file: Path

    @property
    def regressions(self) -> list[str]:
        return [r.key for r in self.rows if r.verdict == Outcome.REGRESSION]


def sides_of(a: str, b: str) -> tuple[Side, Side]:
    """Side A and side B of two servers (servers.yaml ids or specs), no overrides."""
    return Side("a", resolve_server(a).spec, []), Side("b", resolve_server(b).spec, [])


def noise_model_for(plan: RunPlan, runner_class: str, root: Path | None) -> noise.NoiseModel | None:
    """The case's noise model for side A's server line, if calibrate learned one."""
    if root is None:
        return None
    identity = plan.provider.identity
    r = plan.resolved
    return noise.find(root, runner_class, server_line(identity.flavor, str(identity.version)), r.name, r.profile,
                      r.case)


def size_of(plans: list[RunPlan], aim: Aim, runner_class: str) -> design_mod.Design:
    resolved = plans[1].resolved
    measured = {s.phase for s in resolved.steps if isinstance(s, MeasureStep)}
    phases = len(measured)
    judged = len(resolved.compare) or design_mod.DEFAULT_JUDGED_PER_PHASE
    model = noise_model_for(plans[0], runner_class, baselines_dir() / "noise")
    bursts = aim.bursts - aim.warmup if aim.bursts else None
    if aim.by_profile:
        counts = [resolved.workload.model_copy(update={"transactions": s.transactions or resolved.workload.transactions})
                  .bursts()[1] for s in resolved.steps if isinstance(s, MeasureStep)]
        bursts = bursts or max(max(counts, default=10) - aim.warmup, 2)
        return design_mod.for_case(model, phases, judged, aim.warmup, aim.target, float("inf"),
                                   aim.instances or PROFILE_INSTANCES, bursts, fixed="--size profile", measured=measured)
    return design_mod.for_case(model, phases, judged, aim.warmup, aim.target, aim.budget_minutes, aim.instances,
                               bursts, fixed=" and ".join(f for f, given in (("--instances", aim.instances),
                                                                             ("--bursts", aim.bursts)) if given) or None,
                               measured=measured)


def clear_at_interim(run: InterleavedRun, compare, min_effect: float) -> str | None:
    """At the interim look (half the planned instance pairs, 4 or more planned): a
    judged regression at the interim level ends the A/B (judge/bursts.py)."""
    if len(run.instances) != interim_look(run.planned_instances or 0):
        return None
    priors, _ = noise.priors_for(run, baselines_dir() / "noise")
    worse = [r.key for r in judge_run(run, compare, min_effect, priors=priors) if r.verdict == Outcome.REGRESSION]
    return f"regression already clear at the interim look ({', '.join(worse)})" if worse else None


def plan_and_size(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None,
                  aim: Aim, runner_class: str) -> tuple[list[RunPlan], design_mod.Design]:
    """Every input check and the size, before any server starts."""
    plans = plan_sides(scenario, profile, sides, parent, case, aim.bursts, aim.phases)
    return plans, size_of(plans, aim, runner_class)


def run_sized(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None, aim: Aim,
              min_effect: float, out_dir: Path, progress: Progress, runner_class: str,
              setup_sql: tuple[list[str], list[str]] = ([], []),
              sized: tuple[list[RunPlan], design_mod.Design] | None = None) -> SizedAB:
    plans, design = sized or plan_and_size(scenario, profile, sides, parent, case, aim, runner_class)
    progress.info(f"A/B sized: {design.describe()}")
    bursts = design.bursts + aim.warmup
    compare = plans[1].resolved.compare
    run = run_interleaved(plans, sides, progress, runner_class, bursts, aim.warmup, setup_sql,
                          instances=design.instances,
                          replan=lambda: plan_sides(scenario, profile, sides, parent, case, bursts, aim.phases),
                          stop=lambda partial: clear_at_interim(partial, compare, min_effect))
    out_dir.mkdir(parents=True, exist_ok=True)
    bursts_file = out_dir / f"{run.id}.bursts.json"
    write_atomic(bursts_file, json.dumps(run.dump(), indent=1) + "\n")
    priors, prior_source = noise.priors_for(run, baselines_dir() / "noise")
    rows = judge_run(run, compare, min_effect, priors=priors)
    text = interleaved_markdown(run, rows, min_effect, instance_source=prior_source, sizing=design.describe())
    write_atomic(out_dir / f"{run.id}.md", text)
    return SizedAB(run, rows, design, text, bursts_file)
