"""The explain pass: why B is slower, measured on the servers that showed it.

It runs inside the A/B's last instance pair, after every verdict burst (so the
verdict's bursts are untouched: same servers, same timings, judged without it): for
each phase to explain, `pairs` extra burst pairs in the A/B's order (A B, B A, …),
each as long as ~2 s (the phase's burst repeated: enough samples), the same seeded
work on both sides, the idle side frozen as before. Each burst is
profiled by perf (run/profiler.py) and, where performance_schema is on, counted by
its statement digests and waits (run/digests.py: instruments enabled for this pass
only). The data is as the A/B's last step left it: a phase whose data a later step
changed runs its statements on that later data (the same on both sides).

Writes `<run id>.explain/`: `explain.json` (model/explain.py), one folded profile per
burst, per phase the folded sum of each side and flame graphs (report/flamegraphs.py).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from perfci.model.bursts import InterleavedRun
from perfci.model.explain import ExplainBurst, ExplainRun, ExplainSideInfo, folded_text
from perfci.model.scenario import MeasureStep
from perfci.report import flamegraphs
from perfci.run import digests, profiler
from perfci.run.steps import step_bursts
from perfci.sessions.interleave import SideServer, pair_order, thawed
from perfci.util.errors import InfraFailure
from perfci.util.files import write_atomic
from perfci.util.progress import Progress

EXPLAIN_PAIRS = 4           # burst pairs per phase: replicates for the noise test (judge/profile_diff.py)
SEED_OFFSET = 100_000       # explain bursts draw other transactions than the verdict's
PROFILE_SECONDS = 2.0       # an explain burst runs at least this long: ~2000 samples at 997 Hz per CPU
MAX_STRETCH = 20


def explain_transactions(verdict: InterleavedRun | None, phase: str, size: int) -> int:
    """Transactions per explain burst: the phase's burst, repeated until it lasts about
    PROFILE_SECONDS (as long as the verdict's bursts took): a burst of a few hundred
    samples cannot tell a function's change from sampling noise."""
    took = [b.duration_s for b in (verdict.bursts if verdict else []) if b.phase == phase and not b.warmup]
    if not took:
        return size
    return size * min(MAX_STRETCH, max(1, math.ceil(PROFILE_SECONDS / (sum(took) / len(took)))))


@dataclass(frozen=True)
class ExplainPass:
    """An explain pass as it ran: its record (written as explain.json) and each burst's
    folded profile by file name (written beside it), for the comparison without reading
    them back."""
    run: ExplainRun
    folded: dict[str, dict[str, int]]


def explain_dir(out_dir: Path, run_id: str) -> Path:
    return out_dir / f"{run_id}.explain"


def run_explain_pass(servers: list[SideServer], phases: list[str], verdict: InterleavedRun, why_run: str,
                     out_dir: Path, progress: Progress, first: int = 0,
                     pairs: int = EXPLAIN_PAIRS) -> ExplainPass:
    """Explain bursts of `phases` on the running `servers` (A, B; both frozen), after
    the `verdict` run's bursts (sized from their durations)."""
    run_id = verdict.id
    started = time.monotonic()
    target = explain_dir(out_dir, run_id)
    target.mkdir(parents=True, exist_ok=True)
    resolved = servers[0].plan.resolved
    steps = {s.phase: s for s in resolved.steps if isinstance(s, MeasureStep)}
    notes: list[str] = []
    profiling = profiler.why_no_profiles()
    if profiling:
        notes.append(f"no CPU profiles: {profiling}")
    elif lacking := profiler.sampling_event()[1]:
        notes.append(f"CPU profiles of user space only: {lacking}")
    schema_on = {}
    for s in servers:
        with thawed(s), s.plan.provider.connect() as conn, conn.cursor() as cur:
            schema_on[s.side.name] = digests.enabled(cur)
            if schema_on[s.side.name]:
                digests.enable_instruments(cur)
    off = [name.upper() for name, on in schema_on.items() if not on]
    if off:
        notes.append(f"no statement digests or waits on {' and '.join(off)}: performance_schema is off (a startup "
                     "option: off in the scenario's config, or by the server's default as in MariaDB; "
                     "--a-config performance_schema=ON --b-config performance_schema=ON turns it on for both sides)")
    bursts: list[ExplainBurst] = []
    folded: dict[str, dict[str, int]] = {}  # each burst's profile, kept in memory for the comparison
    progress.info(f"== explain pass ({why_run}): {pairs} burst pairs of {', '.join(phases)}, profiled")
    progress.plan(2 * pairs * len(phases))
    for phase in phases:
        step = steps[phase]
        size = explain_transactions(verdict, phase, step_bursts(resolved.workload, step, None)[0])
        for k in range(pairs):
            for side_index in pair_order(k, first):
                s = servers[side_index]
                burst, stacks = _burst(s, step, size, resolved.workload.rand_seed + SEED_OFFSET + k, k, target,
                                       profiling is None, schema_on[s.side.name])
                bursts.append(burst)
                if burst.profile and stacks is not None:
                    folded[burst.profile] = stacks
                progress.advance(f"explain {phase}: burst {k + 1}/{pairs} on {s.label}")
    progress.finish()
    undigested = [s.label for s in servers
                  if schema_on[s.side.name] and not any(b.digests for b in bursts if b.side == s.side.name)]
    if undigested:
        notes.append(f"no statement digests on {' and '.join(undigested)}: the benchmark's statements ran as "
                     "server-side prepared statements (sysbench's --db-ps-mode auto), which MariaDB's "
                     "performance_schema does not digest; a phase with `db-ps-mode: disable` in its options "
                     "sends them as text")
    run = ExplainRun(run_id=run_id, why_run=why_run, phases=phases,
                     sides=[ExplainSideInfo(name=s.side.name, line=side_line(s), binary=_binary(s),  # type: ignore[arg-type]
                                            performance_schema=schema_on[s.side.name]) for s in servers],
                     profiler=profiler.profiler_line(), bursts=bursts, notes=notes)
    drawn = _draw(run, folded, target) if profiling is None else []
    run = run.model_copy(update={"notes": [*run.notes, *drawn], "seconds": round(time.monotonic() - started, 1)})
    progress.info(f"== explain pass done in {run.seconds:.0f} s")
    write_atomic(target / "explain.json", json.dumps(run.dump(), indent=1) + "\n")
    return ExplainPass(run, folded)


def side_line(s: SideServer) -> str:
    info = s.server_info
    return f"{info['flavor']} {info['full_version']}" if info else "?"


def _binary(s: SideServer) -> str:
    try:
        return Path(f"/proc/{s.plan.provider.pid}/exe").resolve().name
    except OSError:
        return "?"


def _burst(s: SideServer, step: MeasureStep, size: int, seed: int, k: int, target: Path, profile: bool,
           schema_on: bool) -> tuple[ExplainBurst, dict[str, int] | None]:
    name = f"{step.phase}-{s.side.name}-{k}"
    data = target / f"{name}.perf.data"
    with profiler.scratch(data):  # raw perf data never stays in the uploaded dir, whatever fails
        return _profiled_burst(s, step, size, seed, k, target, profile, schema_on, name, data)


def _profiled_burst(s: SideServer, step: MeasureStep, size: int, seed: int, k: int, target: Path, profile: bool,
                    schema_on: bool, name: str, data: Path) -> tuple[ExplainBurst, dict[str, int] | None]:
    with thawed(s):
        if schema_on:
            with s.plan.provider.connect() as conn, conn.cursor() as cur:
                digests.reset(cur)
        pid = s.plan.provider.pid
        if profile and pid is not None:
            with profiler.recording(pid, data):
                duration, _, _ = s.burst(step, size, seed)  # sysbench's own time: perf's start and stop not in it
        else:
            duration, _, _ = s.burst(step, size, seed)
        rows, waits = [], {}
        if schema_on:
            with s.plan.provider.connect() as conn, conn.cursor() as cur:
                rows, waits = digests.read_digests(cur), digests.read_waits(cur, s.ctx.bench.user)
    folded_name, cpu, folded = None, 0, None
    if data.exists():
        folded = profiler.fold(data)
        folded_name = f"{name}.folded"
        write_atomic(target / folded_name, folded_text(folded))
        cpu = sum(folded.values())
    return ExplainBurst(phase=step.phase, side=s.side.name, index=k, transactions=size,  # type: ignore[arg-type]
                        duration_s=round(duration, 4), profile=folded_name, profile_cpu_ns=cpu, digests=rows,
                        waits_ps=waits), folded


def _draw(run: ExplainRun, folded: dict[str, dict[str, int]], target: Path) -> list[str]:
    """Per phase: each side's bursts summed into one folded file, a flame graph of each
    and the differential one; notes on what could not be drawn."""
    notes = []
    for phase in run.phases:
        summed = {}
        for side in ("a", "b"):
            total: dict[str, int] = {}
            for b in run.of(phase, side):
                for stack, ns in folded.get(b.profile or "", {}).items():
                    total[stack] = total.get(stack, 0) + ns
            summed[side] = target / f"{phase}-{side}.folded"
            write_atomic(summed[side], folded_text(total))
        try:
            for side in ("a", "b"):
                flamegraphs.flamegraph(summed[side], target / f"{phase}-{side}.svg",
                                       f"{phase}: {side.upper()} ({run.sides[0 if side == 'a' else 1].line})")
            flamegraphs.differential(summed["a"], summed["b"], target / f"{phase}-diff.svg",
                                     f"{phase}: B against A, same transactions")
        except InfraFailure as failure:
            notes.append(f"no flame graphs for {phase}: {failure}")
    return notes
