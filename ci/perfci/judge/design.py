"""How big an interleaved A/B must be to see a target effect: K instance pairs of N
burst pairs per phase, chosen from the case's noise (its noise model, else this
runner class's measured default) before the first server starts.

The verdict's variance of the mean log difference (judge/paired.py) is
    block_sd^2 / (K x N/2)  +  instance_sd^2 / K
(blocks of two burst pairs within an instance, instances within sides). Its minimum
detectable effect at 90 % power, two-sided at the level of the final look (7/8 of
ALPHA with an interim look, i.e. K >= 4) divided by the judged metrics (Holm's worst
step), is (t(1 - level/2) + t(0.90)) x se with the degrees of freedom the verdict will
have (K - 1 from 4 instance pairs: `mde`).
The A/B is sized on the throughput metrics (`tps`, `qps`) of every phase: the
target holds for the worst of them. Cost: every instance pair starts two fresh
servers from the dataset (INSTANCE_OVERHEAD_S) and runs N + warm-up pairs of every
phase. Of all (K, N) within the time budget, the cheapest that reaches the target;
if none does, the most sensitive one (the report says what it reached).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perfci.judge.burst_verdicts import INTERIM_SHARE, SEQUENTIAL_MIN_INSTANCES, instance_tables
from perfci.judge.calibration import cycle_seconds
from perfci.judge.paired import (
    ABBA_BLOCK,
    ALPHA,
    CHECKED_INSTANCES,
    RUNNER_DEFAULT_INSTANCE_DF,
    RUNNER_DEFAULT_INSTANCE_SD,
    WORK_INSTANCE_SD,
    block_means,
    differences,
    learned_prior,
    runner_default_prior,
)
from perfci.judge.stats import detectable_shift, satterthwaite_df
from perfci.model.ab_verdict import Pilot, Sizing
from perfci.model.bursts import InterleavedRun
from perfci.model.metrics import WORK_METRIC
from perfci.model.noise import MetricNoise, NoiseModel

DEFAULT_TARGET_MDE = 0.05
WORK_TARGET_MDE = 0.01  # --measure work
DEFAULT_BUDGET_MINUTES = 25.0
# This runner class without a noise model (benchmarks/results/false-alarms-20261124.md,
# rebuild-after-delete smoke, 2-core host): sd of a two-pair block's mean log(B/A) of
# the noisier throughput phase, and one burst pair of every phase in seconds.
RUNNER_DEFAULT_BLOCK_SD = 0.078
RUNNER_DEFAULT_CYCLE_S = 6.6
INSTANCE_OVERHEAD_S = 15.0   # restore, start two servers, quiesce: 35 real smoke A/As took 148-161 s for 2 x 10 pairs
DEFAULT_JUDGED_PER_PHASE = 9  # default `compare:` metrics a phase reports (35 real smoke A/As: 8, and statement CPU)
SIZED_METRICS = ("tps", "qps")
# Counting work (--measure work, run/work.py: callgrind on this 2-core runner; the stability
# A/As in benchmarks/results/work): a two-pair block's sd of log(B/A) of instructions per
# transaction, rounded up; one burst pair of a phase (bursts of at most 500 transactions,
# several times slower than native); restoring and starting two servers under valgrind
WORK_BLOCK_SD = 0.002
WORK_PAIR_S = 3.5  # per phase: two bursts of ~1 s and their counter dumps
WORK_INSTANCE_OVERHEAD_S = 30.0
MAX_INSTANCES = 12
# The largest MDE a nightly's reference A/B may plan for each phase it runs (#55): a
# many-phase case whose whole A/B cannot reach it within the budget runs the phases that
# looked worst tonight instead, as many as still reach it (`phases_within`)
PHASE_MDE_LIMIT = 0.08
MIN_BURSTS, MAX_BURSTS = 6, 200


@dataclass(frozen=True)
class KeyNoise:
    """What sizing needs of one metric's noise."""
    block_sd: float
    instance_sd: float
    instance_df: int


RUNNER_DEFAULT_NOISE = KeyNoise(RUNNER_DEFAULT_BLOCK_SD, RUNNER_DEFAULT_INSTANCE_SD, RUNNER_DEFAULT_INSTANCE_DF)
WORK_DEFAULT_NOISE = KeyNoise(WORK_BLOCK_SD, WORK_INSTANCE_SD, RUNNER_DEFAULT_INSTANCE_DF)


@dataclass(frozen=True)
class Measuring:
    """What an A/B's bursts measure, as sizing sees it: the metrics it is sized on, their
    runner default noise, one burst pair of one phase and one instance pair's overhead
    in seconds."""
    metrics: tuple[str, ...]
    default: KeyNoise
    pair_s: float
    overhead_s: float


MEASURING = {"time": Measuring(SIZED_METRICS, RUNNER_DEFAULT_NOISE, RUNNER_DEFAULT_CYCLE_S / 2, INSTANCE_OVERHEAD_S),
             "work": Measuring((WORK_METRIC,), WORK_DEFAULT_NOISE, WORK_PAIR_S, WORK_INSTANCE_OVERHEAD_S)}


@dataclass(frozen=True)
class Design:
    instances: int
    bursts: int          # measured burst pairs per phase and instance pair (warm-up not counted)
    mde: float           # what the worst sized metric can see at 90 % power
    minutes: float
    target: float
    budget_minutes: float
    source: str          # where the noise figures came from
    fixed: str | None = None  # what fixed the size instead of the target (an option)

    @property
    def reaches_target(self) -> bool:
        return self.mde <= self.target

    def record(self, pilot: Pilot | None = None) -> Sizing:
        """The size, typed, as the verdict and the confirmation keep it."""
        return Sizing(instances=self.instances, bursts=self.bursts, mde=self.mde, minutes=self.minutes,
                      target=self.target, budget_minutes=self.budget_minutes, source=self.source, fixed=self.fixed,
                      pilot=pilot)

    def describe(self) -> str:
        return self.record().said()


def past_budget(done: int, planned: int, elapsed_s: float, budget_minutes: float) -> str | None:
    """Why a sized A/B stops after `done` of `planned` instance pairs: the next would end
    past its budget at the pace of those done (None: it goes on). The budget is a
    deadline: no slack over it (sizing from a runner default can be far off, a counted
    compressed write transaction ~1 s against a point select's ~2 ms, and the internal
    pilot re-plans from the pace measured; the first pair's dataset restore counts in
    the pace, so it errs early)."""
    if done == 0 or done >= planned:
        return None
    if elapsed_s * (done + 1) / done <= budget_minutes * 60:
        return None
    return (f"the next instance pair would end past the {budget_minutes:g}-minute budget "
            f"({done} took {elapsed_s / 60:.1f} min)")


def final_level(instances: int, judged: int, alpha: float = ALPHA) -> float:
    share = 1 - INTERIM_SHARE if instances >= SEQUENTIAL_MIN_INSTANCES else 1.0
    return alpha * share / max(judged, 1)


def mde(noise: KeyNoise, instances: int, bursts: int, judged: int, alpha: float = ALPHA) -> float:
    """Smallest relative change (B/A - 1, log scale) flagged with 90 % power, with the
    degrees of freedom the verdict will have (paired.centre_test): one instance pair,
    the bursts' and the prior's by Welch-Satterthwaite; fewer than CHECKED_INSTANCES,
    prior df + K - 1; from there the centres alone decide when they say less, K - 1."""
    blocks = max(bursts // ABBA_BLOCK, 1)
    within = noise.block_sd ** 2 / blocks          # of one instance pair's centre
    between = noise.instance_sd ** 2
    if instances == 1:
        df = satterthwaite_df([(within, blocks - 1), (between, noise.instance_df)], fallback=float(blocks - 1 or 1))
    elif instances < CHECKED_INSTANCES:
        df = noise.instance_df + instances - 1
    else:
        df = instances - 1
    return detectable_shift(final_level(instances, judged, alpha), df, math.sqrt((within + between) / instances))


def minutes(instances: int, bursts: int, warmup: int, cycle_s: float, overhead_s: float = INSTANCE_OVERHEAD_S) -> float:
    return instances * (overhead_s + (bursts + warmup) * cycle_s) / 60


def size(noises: list[KeyNoise], cycle_s: float, judged: int, warmup: int, target: float = DEFAULT_TARGET_MDE,
         budget_minutes: float = DEFAULT_BUDGET_MINUTES, source: str = "the runner default",
         instances: int | None = None, bursts: int | None = None, fixed: str | None = None,
         alpha: float = ALPHA, overhead_s: float = INSTANCE_OVERHEAD_S) -> Design:
    """The cheapest (K, N) within the budget whose worst sized metric sees `target`;
    else the most sensitive within the budget; else the smallest A/B there is.
    `instances` / `bursts` (measured pairs) fix that dimension; `alpha`: the A/B's
    family-wise level (a nightly's reference A/B: its false-issue budget's share)."""
    noises = noises or [RUNNER_DEFAULT_NOISE]
    candidates: list[Design] = []
    for k in ([instances] if instances else range(1, MAX_INSTANCES + 1)):
        for n in ([bursts] if bursts else range(MIN_BURSTS, MAX_BURSTS + 1, ABBA_BLOCK)):
            cost = minutes(k, n, warmup, cycle_s, overhead_s)
            if cost > budget_minutes and candidates:
                break
            candidates.append(Design(k, n, max(mde(x, k, n, judged, alpha) for x in noises), cost, target,
                                     budget_minutes, source, fixed))
    within_budget = [d for d in candidates if d.minutes <= budget_minutes] or [min(candidates, key=lambda d: d.minutes)]
    reaching = [d for d in within_budget if d.reaches_target]
    if reaching:
        return min(reaching, key=lambda d: (d.minutes, d.instances))
    return min(within_budget, key=lambda d: (d.mde, d.minutes))


def key_noise(key: str, m: MetricNoise) -> KeyNoise:
    """A learned metric's noise for sizing: its between-instance spread never narrower
    than its kind's runner default (as the verdict judges it: paired.learned_prior)."""
    default = runner_default_prior(key)
    learned = m.prior()
    prior = learned_prior(learned, default) if learned else default
    return KeyNoise(m.block_sd, prior.sd, prior.df)


def learned_sized(model: NoiseModel | None, measured: set[str] | None, measure: str = "time") -> dict[str, MetricNoise]:
    """The noise model's sized metrics (throughput, or counted instructions) of the phases
    the A/B runs (`measured`; None: all)."""
    how = MEASURING[measure]
    return {k: m for k, m in (model.metrics.items() if model else []) if k.split(".", 1)[1] in how.metrics
            and (measured is None or k.split(".", 1)[0] in measured)}


def sized_noises(model: NoiseModel | None, measured: set[str], measure: str = "time") -> dict[str, KeyNoise]:
    """Per sized key of the measured phases, its noise as sizing takes it: learned, else
    the runner default (what the internal pilot compares its bursts with)."""
    how = MEASURING[measure]
    learned = learned_sized(model, measured, measure)
    return {f"{phase}.{metric}": key_noise(f"{phase}.{metric}", learned[f"{phase}.{metric}"])
            if f"{phase}.{metric}" in learned else how.default for phase in sorted(measured) for metric in how.metrics}


def for_case(model: NoiseModel | None, phases: int, judged_per_phase: int, warmup: int,
             target: float = DEFAULT_TARGET_MDE, budget_minutes: float = DEFAULT_BUDGET_MINUTES,
             instances: int | None = None, bursts: int | None = None, fixed: str | None = None,
             measured: set[str] | None = None, alpha: float = ALPHA, measure: str = "time") -> Design:
    """Size an A/B of a case from its noise model (the throughput keys it holds, or with
    `measure` work its instructions; the runner default's between-instance spread where it
    learned none), else from the runner default; `phases` measured phases of
    `judged_per_phase` judged metrics; `measured`: the phases the A/B runs (the model's
    other phases do not size it)."""
    how = MEASURING[measure]
    judged = max(phases, 1) * judged_per_phase
    sized = learned_sized(model, measured, measure)
    if not sized:
        what = "counted work's" if measure == "work" else "the"
        return size([how.default], how.pair_s * max(phases, 1), judged, warmup, target, budget_minutes,
                    f"{what} runner default (no noise model for this case: `perfci calibrate` learns one)",
                    instances, bursts, fixed, alpha, how.overhead_s)
    assert model is not None
    noises = [key_noise(k, m) for k, m in sized.items()]
    cycle = cycle_seconds(model, measured) or how.pair_s * max(phases, 1)
    return size(noises, cycle, judged, warmup, target, budget_minutes,
                f"the noise model of {len(model.runs)} A/As learned {model.created_at[:10]}", instances, bursts,
                fixed, alpha, how.overhead_s)


def phases_within(order: Sequence[str], size_for: Callable[[tuple[str, ...]], Design],
                  limit: float = PHASE_MDE_LIMIT) -> tuple[tuple[str, ...], Design]:
    """The longest head of `order` (the phases, most suspect first) whose A/B, sized by
    `size_for`, sees `limit` within its budget; at least the first phase, whatever it
    sees (its Design says what). More phases never see more: each adds burst time and
    judged metrics to the same budget, so the first that misses ends the search."""
    if not order:
        raise ValueError("phases_within: no phases to choose from")
    chosen: tuple[str, ...] = (order[0],)
    size = size_for(chosen)
    for n in range(2, len(order) + 1):
        bigger = size_for(tuple(order[:n]))
        if bigger.mde > limit:
            break
        chosen, size = tuple(order[:n]), bigger
    return chosen, size



# The internal pilot (#55): sizing from a runner default can be far off (the kept A/As'
# two-pair blocks of throughput spread 4.4-18 % by phase and server against the default's
# 7.8 %, benchmarks/results/aa-campaign). After PILOT_INSTANCES instance pairs a sized A/B
# measures its own bursts' within-instance block spread and the seconds an instance pair
# took, and plans its number of instance pairs again (its bursts per pair stay). Only the
# noise is re-estimated, never the effect, so the level is the one planned.
PILOT_INSTANCES = 2
PILOT_MIN_BLOCKS = 6  # per sized metric, over the pilot's instance pairs: fewer say too little


def within_block_sd(run: InterleavedRun, key: str) -> tuple[float, int] | None:
    """The within-instance sd of `key`'s two-pair block means of log(B/A) over the run's
    instance pairs (each pair's own mean taken out: the effect and the instances' spread
    are not noise of a block), and how many blocks it rests on."""
    residuals: list[float] = []
    groups = 0
    for table in instance_tables(run):
        if key not in table:
            continue
        d, _ = differences(*table[key])
        blocks = block_means(d, ABBA_BLOCK)
        if len(blocks) >= 2:
            residuals += [float(b - blocks.mean()) for b in blocks]
            groups += 1
    if len(residuals) - groups < 2:
        return None
    return math.sqrt(sum(r * r for r in residuals) / (len(residuals) - groups)), len(residuals)


def pilot(run: InterleavedRun, plan: Design, noises: dict[str, KeyNoise], judged: int, elapsed_s: float,
          alpha: float = ALPHA) -> Pilot | None:
    """The internal pilot's size for a sized A/B after its first instance pairs (None: not
    now, or too few blocks to say): the sized metrics' (`noises`: the plan's noise per key)
    block spread measured, their instance spread as planned; the fewest instance pairs (no
    fewer than have run) whose worst metric sees the plan's target within its budget at
    the pace measured, else the most sensitive the budget allows."""
    done = len(run.instances)
    if plan.fixed or done != PILOT_INSTANCES or plan.instances <= done:
        return None
    measured = {key: within_block_sd(run, key) for key in noises}
    if not measured or any(m is None or m[1] < PILOT_MIN_BLOCKS for m in measured.values()):
        return None
    sds = {key: m[0] for key, m in measured.items() if m is not None}
    worst = max(sds, key=lambda k: sds[k])
    seen = [KeyNoise(sds[k], n.instance_sd, n.instance_df) for k, n in noises.items()]
    instance_s = elapsed_s / done
    in_budget = int(plan.budget_minutes * 60 // max(instance_s, 1e-9))
    affordable = max(done, min(MAX_INSTANCES, in_budget))
    best: tuple[float, int] | None = None
    for k in range(done, affordable + 1):
        seeing = max(mde(n, k, plan.bursts, judged, alpha) for n in seen)
        if seeing <= plan.target:
            best = (seeing, k)
            break
        if best is None or seeing < best[0]:
            best = (seeing, k)
    assert best is not None
    return Pilot(after=done, block_sd=sds[worst], planned_block_sd=noises[worst].block_sd, instance_s=instance_s,
                 planned=plan.instances, instances=best[1], mde=best[0],
                 capped_by="instances" if in_budget > MAX_INSTANCES else "budget")
