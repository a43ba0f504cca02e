"""From an interleaved A/B's bursts to the paired table and its verdicts."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from perfci.host import policy
from perfci.judge.paired import ALPHA, WORK_MIN_EFFECT, PairedVerdict, PairTable, judge_instances
from perfci.model.bursts import Burst, InterleavedRun
from perfci.model.metrics import AB_DEFAULT_COMPARED, TAIL_LATENCIES, WORK_METRIC, MetricSpec, default_spec
from perfci.model.noise import InstancePrior
from perfci.model.scenario import CompareSpec
from perfci.model.verdicts import Outcome


def busy(burst: Burst) -> bool:
    """Other processes used the CPU during the burst beyond the host policy's limit (the
    same as a run's: host/policy.py): its pair is dropped. Never a counted burst: the
    instructions a statement executes do not depend on who else used the CPU (what
    counting is for, on a shared runner)."""
    return WORK_METRIC not in burst.metrics and policy.busy((burst.host_cpu or {}).get("others"))


def busy_pairs(run: InterleavedRun) -> dict[str, int]:
    """Per phase: measured pairs dropped because the host was busy during one of their bursts."""
    return {phase: len({(b.instance, b.index) for b in run.bursts if b.phase == phase and not b.warmup and busy(b)})
            for phase in run.bursts_per_phase}


def instance_tables(run: InterleavedRun) -> list[dict[str, tuple[list[float], list[float]]]]:
    """Per instance pair: key '<phase>.<metric>' -> (A values, B values) over its
    measured pairs, in order. A metric absent from a burst (a counter that did not
    move) counts as 0 there. A pair with a burst during which other processes used
    the CPU (beyond host/policy.py's BUSY_OTHER_CORES) is dropped: the validity gate at burst scale,
    by the host's load, never by the burst's own numbers."""
    return [_table([b for b in run.bursts if b.instance == pair.index], run.bursts_per_phase)
            for pair in run.instances]


def pair_table(run: InterleavedRun) -> dict[str, tuple[list[float], list[float]]]:
    """All instance pairs' tables end to end (for what does not judge: the order of
    instances is kept, pairs of one instance stay consecutive)."""
    table: dict[str, tuple[list[float], list[float]]] = {}
    tables = instance_tables(run)
    keys = list(dict.fromkeys(k for t in tables for k in t))
    for t in tables:
        n = len(next(iter(t.values()))[0]) if t else 0
        for key in keys:
            a, b = t.get(key, ([0.0] * n, [0.0] * n))
            slot = table.setdefault(key, ([], []))
            slot[0].extend(a)
            slot[1].extend(b)
    return table


def _table(bursts: list[Burst], phases) -> dict[str, tuple[list[float], list[float]]]:
    table: dict[str, tuple[list[float], list[float]]] = {}
    for phase in phases:
        measured = [b for b in bursts if b.phase == phase and not b.warmup]
        dropped = {b.index for b in measured if busy(b)}
        by_pair: dict[int, dict[str, dict[str, float]]] = {}
        for b in measured:
            if b.index not in dropped:
                by_pair.setdefault(b.index, {})[b.side] = b.metrics
        pairs = [p for _, p in sorted(by_pair.items()) if "a" in p and "b" in p]
        keys = sorted({k for p in pairs for side in p.values() for k in side})
        for key in keys:
            table[f"{phase}.{key}"] = ([p["a"].get(key, 0.0) for p in pairs], [p["b"].get(key, 0.0) for p in pairs])
    return table


def judged_specs(table: PairTable, compare: list[CompareSpec]) -> dict[str, MetricSpec]:
    """The keys that can fail the A/B: the scenario's `compare:` metrics (default:
    throughput, latency and the key work counters) in every phase, and the instructions
    per transaction of an A/B that counted them."""
    specs = ({c.metric: _spec(c) for c in compare} if compare else {m: default_spec(m) for m in AB_DEFAULT_COMPARED})
    specs.setdefault(WORK_METRIC, default_spec(WORK_METRIC))  # counted work is judged whatever the scenario lists
    out = {}
    for key in table:
        metric = key.split(".", 1)[1]
        if metric in specs:
            out[key] = specs[metric]
    return out


def _spec(c: CompareSpec) -> MetricSpec:
    d = default_spec(c.metric)
    return MetricSpec(c.metric, c.direction or d.direction, c.tolerance or d.tolerance,
                      d.floor if c.floor is None else c.floor)


# The work fingerprint: counters per transaction that are the same on both sides when
# both run the same seeded work (20 real A/As here: identical to the last digit).
# perfci's own statements (SHOW STATUS, SET) are not the workload's work. Handler_
# counts what the server did for the statements: between two builds it is part of the
# change under test (MySQL 8.0.12 vs 8.0.31: Handler_read_rnd 7.3 vs 0 per read-only
# transaction, a plan change), so two different builds are held to the statements
# the client sent (Com_) only.
WORK_PREFIXES = ("global_status.Com_", "global_status.Handler_")
STATEMENT_PREFIXES = ("global_status.Com_",)
HARNESS_COUNTERS = ("global_status.Com_show_status", "global_status.Com_set_option")
WORK_TOLERANCE = 0.001  # relative; beyond it the sides did different work
# Several client threads share a phase's seeded events as the scheduler lets them:
# the rows each statement touches differ from run to run (Handler_ by several
# percent in real A/As at four threads), and a transaction restarted after a deadlock
# or a duplicate key sends its statements again. Such phases are held to the
# statements sent, within 1 %.
CONCURRENT_WORK_TOLERANCE = 0.01
TIME_METRICS = ("tps", "qps", "qps_read", "qps_write", "latency_ms_avg", *TAIL_LATENCIES)


@dataclass(frozen=True)
class WorkDifference:
    key: str           # '<phase>.<counter>'
    instance: int
    a: float           # mean per transaction over the instance pair's measured bursts
    b: float

    @property
    def relative(self) -> float:
        return abs(self.b - self.a) / max(abs(self.a), abs(self.b))


def work_differences(run: InterleavedRun) -> list[WorkDifference]:
    """Work counters whose per-transaction mean differs between the sides of an instance
    pair beyond WORK_TOLERANCE (largest first); sides of different server builds, and
    phases of several client threads: the statements sent only."""
    a_side, b_side = run.sides if len(run.sides) == 2 else (None, None)
    same_build = a_side is None or b_side is None or (a_side.flavor, a_side.full_version) == (
        b_side.flavor, b_side.full_version)
    out = []
    for pair, table in zip(run.instances, instance_tables(run)):
        for key, (a, b) in table.items():
            phase, counter = key.split(".", 1)
            concurrent = run.threads_of(phase) > 1
            prefixes = WORK_PREFIXES if same_build and not concurrent else STATEMENT_PREFIXES
            if not counter.startswith(prefixes) or counter in HARNESS_COUNTERS or not (a and b):
                continue
            diff = WorkDifference(key, pair.index, statistics.mean(a), statistics.mean(b))
            if (diff.a or diff.b) and diff.relative > (CONCURRENT_WORK_TOLERANCE if concurrent else WORK_TOLERANCE):
                out.append(diff)
    return sorted(out, key=lambda d: -d.relative)


# Sequential A/B: with 4 or more instance pairs planned, one interim look after half of
# them spends INTERIM_SHARE of ALPHA; the final look spends the rest. The two levels
# add up to ALPHA (a union bound: valid whatever the looks' correlation), a clear
# effect ends the A/B at half its cost, and the final look keeps 7/8 of the level.
INTERIM_SHARE = 0.125
SEQUENTIAL_MIN_INSTANCES = 4


def interim_look(planned: int) -> int | None:
    """After how many instance pairs the interim look comes (None: no interim look)."""
    return planned // 2 if planned >= SEQUENTIAL_MIN_INSTANCES else None


def run_alpha(run: InterleavedRun) -> float:
    """The run's family-wise level over its looks: its own (a nightly's reference A/B, its
    false-issue budget's share, judge/budget.py), else ALPHA."""
    return run.alpha or ALPHA


def look_alpha(run: InterleavedRun) -> float:
    """The family-wise level the run's verdict is judged at: the interim look's share
    when it stopped there, the rest at the final look, the whole level without an interim
    look (run_alpha)."""
    alpha = run_alpha(run)
    planned = run.planned_instances or len(run.instances)
    interim = interim_look(planned)
    if interim is None:
        return alpha
    return alpha * (INTERIM_SHARE if len(run.instances) <= interim else 1 - INTERIM_SHARE)


def judge_run(run: InterleavedRun, compare: list[CompareSpec], min_effect: float,
              min_effects: dict[str, float] | None = None,
              priors: dict[str, InstancePrior] | None = None) -> list[PairedVerdict]:
    """The run's verdicts, at the level of its look (look_alpha). Where the sides did
    different work (work_differences), a time metric (throughput, latency) is no
    verdict on the server's speed: it is `inconclusive`, saying so, never a regression
    or an improvement."""
    tables = instance_tables(run)
    specs = judged_specs({k: v for t in tables for k, v in t.items()}, compare)
    if min_effects is None:  # counted instructions: a smaller step is flagged (WORK_MIN_EFFECT)
        min_effects = {k: min(min_effect, WORK_MIN_EFFECT) for k in specs if k.split(".", 1)[1] == WORK_METRIC}
    rows = judge_instances(tables, specs, alpha=look_alpha(run), min_effect=min_effect, min_effects=min_effects,
                           priors=priors)
    differ = work_differences(run)
    if differ:
        worst = differ[0]
        why = (f"the sides did different work ({worst.key} {worst.a:.4g} vs {worst.b:.4g} per transaction"
               f"{f' and {len(differ) - 1} more' if len(differ) > 1 else ''}): no verdict on time")
        for row in rows:
            if row.spec is not None and row.key.split(".", 1)[1] in TIME_METRICS and row.verdict in (
                    Outcome.REGRESSION, Outcome.IMPROVEMENT, Outcome.UNCHANGED):
                row.verdict, row.reason = Outcome.INCONCLUSIVE, why
    return rows


def burst_summary(run: InterleavedRun) -> dict[str, float]:
    """Mean burst duration per side (for the time-to-verdict figures)."""
    return {side: statistics.mean(b.duration_s for b in run.bursts if b.side == side) for side in ("a", "b")}
