"""Step handlers: one function per step kind, and the loop that runs steps and
records each one (duration, sizes after it, compression work of non-measure steps).

A handler gets the step context and its step, does the work, and returns the
kind-specific fields of the step's record. `HANDLERS` maps kind -> handler; the
runner's unit tests pass their own mapping.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from perfci.host import hostcpu
from perfci.model.connection import Connection
from perfci.model.metrics import WORK_METRIC
from perfci.model.result import Metrics, Phase, QuiesceOutcome, Step
from perfci.model.scenario import (
    ApplyLayoutStep,
    DeleteRandomStep,
    MeasureStep,
    PrepareStep,
    ResolvedScenario,
    SqlStep,
    SysbenchValue,
    Workload,
)
from perfci.providers.provider import ServerProvider
from perfci.run import collectors, loader, sysbench, work
from perfci.run.counted import CountedLaunches
from perfci.run.inspect import DATABASE, RunningServer, counters_delta
from perfci.run.work import FunctionCounts, WorkCounter
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.files import write_atomic
from perfci.util.progress import Progress

ScenarioStep = PrepareStep | ApplyLayoutStep | DeleteRandomStep | SqlStep | MeasureStep
StepFields = dict[str, object]


@dataclass
class StepContext:
    """What every handler may use; records accumulate in `steps` and `phases`."""

    resolved: ResolvedScenario
    scenario_file: Path
    server: ServerProvider
    inspector: RunningServer
    progress: Progress
    logs_dir: Path
    bench: Connection
    handlers: Mapping[str, Handler]
    steps: list[Step] = field(default_factory=list)
    phases: dict[str, Phase] = field(default_factory=dict)
    counting: CountedLaunches | None = None  # a counted run (perfci run --measure work): its launches and counter


Handler = Callable[[StepContext, ScenarioStep], StepFields]


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_steps(ctx: StepContext, steps: list[ScenarioStep]) -> None:
    for step in steps:
        label = f"measure {step.phase}" if isinstance(step, MeasureStep) else f"{step.kind} {step.name}"
        started = utc_now()
        cmp_before = None if isinstance(step, MeasureStep) else ctx.inspector.cmp_snapshot()
        t0 = time.monotonic()
        if ctx.counting is not None:
            ctx.counting.for_step(isinstance(step, MeasureStep), step.name)
        with ctx.progress.step(label):
            try:
                detail = ctx.handlers[step.kind](ctx, step)
            except pymysql.err.MySQLError as exc:  # e.g. the server went away mid-step
                raise InfraFailure(f"step {step.name}: server error: {exc.args[-1] if exc.args else exc}") from None
        record: StepFields = {"name": step.name, "kind": step.kind, "started_at": started,
                              "duration_s": round(time.monotonic() - t0, 3), **detail,
                              "sizes_after": ctx.inspector.sizes()}
        if cmp_before is not None:  # compression work of loads, index builds, ALTERs
            cmp_ = collectors.cmp_delta(cmp_before, ctx.inspector.cmp_snapshot())
            record["innodb_cmp"] = cmp_
            record["compress_miss_rate"] = collectors.miss_rate(cmp_)
        ctx.steps.append(Step.model_validate(record))


# ---------------------------------------------------------------- handlers


def prepare(ctx: StepContext, step: ScenarioStep) -> StepFields:
    assert isinstance(step, PrepareStep)
    ds = ctx.resolved.dataset
    if step.loader == "perfci":
        return _load(ctx, step)
    if ds.payload != "sysbench":
        raise BadInput(f"{ctx.scenario_file}: case {ctx.resolved.case}: payload {ds.payload!r} "
                       "needs the perfci loader (prepare step `loader: perfci`)")
    options = {"tables": ds.tables, "table-size": ds.rows,
               "threads": max(1, min(ds.tables, os.cpu_count() or 1)), **step.options}
    args = sysbench.command(step.workload, "prepare", ctx.bench, options)
    sysbench.run(args, log_path=ctx.logs_dir / f"{step.name}.log")
    return {"command": sysbench.shown(args)}


def _load(ctx: StepContext, step: PrepareStep) -> StepFields:
    ds = ctx.resolved.dataset
    with ctx.server.connect(DATABASE) as conn:
        for i, table in enumerate(ctx.resolved.table_names(), start=1):
            def loaded(n: int, t: str = table) -> None:
                ctx.progress.update(f"{t}: {n} rows")
            loader.load_table(conn, table, ds, step.seed * 1000 + i, loaded)
    return {"loader": "perfci", "payload": ds.payload, "rows_loaded": ds.rows * ds.tables,
            "create_table": loader.create_table_sql("sbtest1", ds)}


def layout_sql(ctx: StepContext) -> str:
    ds = ctx.resolved.dataset
    clauses = [f"ADD INDEX {ix.name} ({', '.join(ix.columns)})" for ix in ds.indexes]
    if ds.row_format:
        clauses.append(f"ROW_FORMAT={ds.row_format}")
    if ds.key_block_size:
        clauses.append(f"KEY_BLOCK_SIZE={ds.key_block_size}")
    if not clauses:
        raise BadInput(f"{ctx.scenario_file}: step apply_layout: the dataset declares no indexes, "
                       "row_format or key_block_size to apply")
    return "ALTER TABLE {table} " + ", ".join(clauses)


def apply_layout(ctx: StepContext, step: ScenarioStep) -> StepFields:
    return {"statements": _execute(ctx, expand_statements(ctx.resolved, [layout_sql(ctx)]))}


def sql(ctx: StepContext, step: ScenarioStep) -> StepFields:
    assert isinstance(step, SqlStep)
    return {"statements": _execute(ctx, expand_statements(ctx.resolved, step.statements))}


def expand_statements(resolved: ResolvedScenario, statements: list[str]) -> list[str]:
    """A case's `{var}`s substituted; a statement naming `{table}` once per table."""
    for name, value in resolved.vars.items():
        statements = [s.replace("{" + name + "}", value) for s in statements]
    out: list[str] = []
    for s in statements:
        out += [s.replace("{table}", t) for t in resolved.table_names()] if "{table}" in s else [s]
    return out


def _execute(ctx: StepContext, statements: list[str]) -> list[dict[str, object]]:
    done: list[dict[str, object]] = []
    with ctx.server.connect(DATABASE) as conn, conn.cursor() as cur:
        for statement in statements:
            t0 = time.monotonic()
            try:
                cur.execute(statement)
            except pymysql.err.MySQLError as exc:
                raise InfraFailure(f"SQL failed: {statement}: {exc.args[-1] if exc.args else exc}") from None
            done.append({"sql": statement, "duration_s": round(time.monotonic() - t0, 3), "rows": cur.rowcount})
    return done


def delete_random(ctx: StepContext, step: ScenarioStep) -> StepFields:
    """Delete a reproducible pseudo-random fraction: CRC32 of (id, seed) decides."""
    assert isinstance(step, DeleteRandomStep)
    threshold = int(step.fraction * 1_000_000)
    deleted, remaining = 0, 0
    with ctx.server.connect(DATABASE) as conn, conn.cursor() as cur:
        for table in ctx.resolved.table_names():
            cur.execute(f"SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), -1) FROM {table}")
            bounds = cur.fetchone()
            assert bounds is not None
            lo, hi = int(bounds[0]), int(bounds[1])
            for start in range(lo, hi + 1, step.chunk_rows):
                end = min(start + step.chunk_rows - 1, hi)
                cur.execute(f"DELETE FROM {table} WHERE id BETWEEN {start} AND {end} "
                            f"AND CRC32(CONCAT(id, ':', {step.seed})) % 1000000 < {threshold}")
                deleted += cur.rowcount
                ctx.progress.update(f"{table}: {deleted} rows deleted")
            cur.execute(f"SELECT COUNT(*) FROM {table}")
            count = cur.fetchone()
            remaining += int(count[0]) if count else 0
    return {"rows_deleted": deleted, "rows_remaining": remaining}


@dataclass(frozen=True)
class PhaseBound:
    """How a measured phase ends: a time box, or fixed work (N seeded transactions,
    `seconds` then being the cap that guards against a stuck server)."""

    seconds: int
    transactions: int | None = None
    rand_seed: int | None = None

    def sysbench_options(self) -> dict[str, SysbenchValue]:
        if self.transactions is None:
            return {"time": self.seconds}
        return {"events": self.transactions, "time": self.seconds, "rand-seed": self.rand_seed or 1}

    def record(self) -> StepFields:
        if self.transactions is None:
            return {"bound": "time"}
        return {"bound": "transactions", "transactions_target": self.transactions, "rand_seed": self.rand_seed}


def phase_bound(resolved: ResolvedScenario, step: MeasureStep) -> PhaseBound:
    wl = resolved.workload
    transactions = step.transactions or wl.transactions
    return PhaseBound(step.time or wl.time, transactions, wl.rand_seed if transactions else None)


def sysbench_script(ctx: StepContext, name: str) -> str:
    """What sysbench runs for a workload name: one of its own tests, or the scenario's
    Lua script of that name written beside the run's logs (kept with them)."""
    text = ctx.resolved.lua.get(name)
    if text is None:
        return name
    path = ctx.logs_dir / f"{name}.lua"
    if not path.is_file() or path.read_text() != text:
        write_atomic(path, text)
    return str(path.resolve())


def sysbench_options(ctx: StepContext, step: MeasureStep, threads: int,
                     bound: dict[str, SysbenchValue]) -> dict[str, SysbenchValue]:
    """sysbench's options for a measured phase or one burst of it: the dataset, the
    client threads, how it ends (`bound`), its latency histogram printed (the tails,
    sysbench.TAILS; it keeps the histogram anyway), the step's own options last."""
    return {"tables": ctx.resolved.dataset.tables, "table-size": ctx.resolved.dataset.rows,
            "threads": threads, **bound, "histogram": True, **step.options}


@dataclass(frozen=True)
class Measured:
    """What one sysbench run against the server measured: its report, the server's
    counters before and after, its CPU (process and per thread) and, when counted, the
    instructions its statement path executed (run/work.py)."""
    args: list[str]
    report: sysbench.SysbenchReport
    counters_before: collectors.Snapshot
    counters_after: collectors.Snapshot
    host_cpu: dict[str, float] | None
    thread_cpu_ns: list[int]
    instructions: int | None = None
    functions: FunctionCounts | None = None  # counted: instructions per function (callgrind)

    def raw_counters(self) -> dict:
        return collectors.delta(self.counters_before, self.counters_after)


def run_measured(ctx: StepContext, step: MeasureStep, options: dict[str, SysbenchValue],
                 log_path: Path | None = None, on_line: Callable[[str], None] | None = None,
                 counter: WorkCounter | None = None) -> Measured:
    """THE measured sysbench run, for a run's phase (measure) and an A/B's burst alike:
    counters and CPU sampled around it; `counter` counts the work inside that window,
    the server's own SHOW STATUS outside it."""
    args = sysbench.command(sysbench_script(ctx, step.workload), "run", ctx.bench, options)
    before = ctx.inspector.counters_snapshot()
    pid = ctx.server.pid
    cpu_before, threads_before = hostcpu.sample(pid), hostcpu.thread_cpu_ns(pid)
    if counter is not None:
        counter.start()
    out = sysbench.run(args, on_line=on_line, log_path=log_path, stalled=ctx.inspector.running_statements)
    instructions = counter.stop() if counter is not None else None
    functions = counter.functions() if counter is not None else None
    thread_deltas = hostcpu.thread_cpu_deltas(threads_before, hostcpu.thread_cpu_ns(pid))
    cpu = hostcpu.cores_used(cpu_before, hostcpu.sample(pid))
    after = ctx.inspector.counters_snapshot()
    return Measured(args, parsed_report(step.workload, out), before, after, cpu, thread_deltas, instructions,
                    functions)


def quiesced(ctx: StepContext, step: MeasureStep) -> QuiesceOutcome | None:
    """Purge and flush before a measured phase, where the scenario asks for it."""
    q = ctx.resolved.quiesce
    if not (q.purge or q.flush_dirty_pages):
        return None
    ctx.progress.update("quiescing: purge and flush before measuring")
    quiet = ctx.inspector.quiesce(ctx.resolved)
    if quiet.timed_out:
        ctx.progress.info(f"  note: quiesce before {step.phase} timed out after {q.timeout_s}s: {quiet}")
    return quiet


def phase_threads(ctx: StepContext, step: MeasureStep) -> int:
    return step.threads if isinstance(step.threads, int) else ctx.resolved.workload.threads


def measure(ctx: StepContext, step: ScenarioStep) -> StepFields:
    assert isinstance(step, MeasureStep)
    if ctx.counting is not None:
        return measure_counted(ctx, step)
    wl = ctx.resolved.workload
    threads = phase_threads(ctx, step)
    bound = phase_bound(ctx.resolved, step)
    seconds = bound.seconds
    options = sysbench_options(ctx, step, threads, {**bound.sysbench_options(), "report-interval": wl.report_interval})
    quiet = quiesced(ctx, step)
    sizes_before = ctx.inspector.sizes()

    def on_line(line: str) -> None:
        iv = sysbench.parse_interval(line)
        if iv:
            ctx.progress.update(f"[{iv.t:.0f}/{seconds}s] tps {iv.tps:.1f} qps {iv.qps:.1f}")

    done = run_measured(ctx, step, options, ctx.logs_dir / f"measure-{step.phase}.log", on_line)
    gauges_after = ctx.inspector.gauges()
    sizes_after = ctx.inspector.sizes()
    report = done.report
    counters = counters_delta(done.counters_before, done.counters_after)
    metrics = Metrics.model_validate({**report.metrics, **collectors.derived(done.raw_counters(), report.metrics)})
    ctx.phases[step.phase] = Phase.model_validate({
        "workload": step.workload, "threads": threads, "time_s": seconds, "command": sysbench.shown(done.args),
        **bound.record(), "host_cpu": done.host_cpu,
        "quiesce": quiet or {}, "sysbench_version": report.sysbench_version, "metrics": metrics,
        "counters": counters, "gauges_after": gauges_after, "intervals": report.intervals,
        "sizes_before": sizes_before, "sizes_after": sizes_after})
    return {"phase": step.phase}


def step_bursts(workload: Workload, step: MeasureStep, bursts: int | None) -> tuple[int, int]:
    """(transactions per burst, bursts) of one interleaved fixed-work phase; --bursts
    overrides the count."""
    if step.transactions:
        workload = workload.model_copy(update={"transactions": step.transactions})
    size, count = workload.bursts()
    return size, bursts or count


# A counted run's phase, the same transactions every night (a burst's fixed costs, its
# connection and prepared statements, are shared by its transactions: its size must not
# move): COUNTED_WARMUP bursts, then COUNTED_BURSTS counted ones (their spread is the
# phase's noise), each a tenth of the phase's interleaved burst (microbench smoke: 300
# point queries, 30 full scans; ~1-15 s under callgrind), COUNTED_TIME_BOXED transactions
# where the phase is time-boxed
COUNTED_WARMUP = 2
COUNTED_BURSTS = 3
COUNTED_FRACTION = 10
COUNTED_TIME_BOXED = 200
COUNTED_TOTALS = ("duration_s", "events", "transactions", "queries", "errors", "reconnects")


def counted_run_burst_size(workload: Workload, step: MeasureStep) -> int:
    if not (step.transactions or workload.transactions):
        return COUNTED_TIME_BOXED
    return max(work.MIN_TRANSACTIONS, step_bursts(workload, step, None)[0] // COUNTED_FRACTION)


def measure_counted(ctx: StepContext, step: MeasureStep) -> StepFields:
    """A measured phase of a counted run (perfci run --measure work): COUNTED_WARMUP
    bursts, then COUNTED_BURSTS counted ones, all of counted_run_burst_size transactions. The
    phase's instructions_per_txn is the counted bursts' instructions over their
    transactions; its time metrics are theirs under the counter (they say nothing, and
    are not judged). Seeds follow the phase's: every night runs the same transactions."""
    assert ctx.counting is not None and ctx.counting.counter is not None
    counter = ctx.counting.counter
    threads = phase_threads(ctx, step)
    bound = phase_bound(ctx.resolved, step)
    seed = bound.rand_seed or ctx.resolved.workload.rand_seed
    cap = bound.seconds * work.SLOWDOWN_CAP
    size = counted_run_burst_size(ctx.resolved.workload, step)
    quiet = quiesced(ctx, step)
    sizes_before = ctx.inspector.sizes()

    def burst(size: int, k: int) -> Measured:
        options = sysbench_options(ctx, step, threads, {"events": size, "time": cap, "rand-seed": seed + k})
        ctx.progress.update(f"burst {k + 1} of {COUNTED_WARMUP} warm-up and {COUNTED_BURSTS} counted, "
                            f"{size} transactions")
        done = run_measured(ctx, step, options, ctx.logs_dir / f"measure-{step.phase}-{k}.log", counter=counter)
        if done.report.metrics["events"] < size:
            raise InfraFailure(f"phase {step.phase}: a counted burst hit its {cap} s cap after "
                               f"{done.report.metrics['events']:.0f} of {size} transactions")
        return done

    for k in range(COUNTED_WARMUP):  # after the restart under the counter, the first bursts count cold caches
        burst(size, k)
    counted = [burst(size, k) for k in range(COUNTED_WARMUP, COUNTED_WARMUP + COUNTED_BURSTS)]
    totals = {k: sum(d.report.metrics.get(k, 0) for d in counted) for k in COUNTED_TOTALS}
    seconds = totals["duration_s"] or 1e-9
    instructions = [d.instructions or 0 for d in counted]
    raw = collectors.delta(counted[0].counters_before, counted[-1].counters_after)
    report = {**totals, "tps": round(totals["transactions"] / seconds, 2), "qps": round(totals["queries"] / seconds, 2),
              WORK_METRIC: round(sum(instructions) / (size * COUNTED_BURSTS), 1)}
    metrics = Metrics.model_validate({**report, **collectors.derived(raw, report)})
    ctx.phases[step.phase] = Phase.model_validate({
        "workload": step.workload, "threads": threads, "time_s": cap,
        "command": sysbench.shown(counted[-1].args), "bound": "transactions",
        "transactions_target": size * COUNTED_BURSTS, "rand_seed": seed, "host_cpu": counted[-1].host_cpu,
        "quiesce": quiet or {}, "sysbench_version": counted[-1].report.sysbench_version, "metrics": metrics,
        "counters": counters_delta(counted[0].counters_before, counted[-1].counters_after),
        "gauges_after": ctx.inspector.gauges(), "sizes_before": sizes_before, "sizes_after": ctx.inspector.sizes(),
        "counted_bursts": [round(n / size, 1) for n in instructions]})
    return {"phase": step.phase}


def parsed_report(workload: str, out: str) -> sysbench.SysbenchReport:
    try:
        return sysbench.parse_report(out)
    except ValueError as exc:
        raise InfraFailure(f"sysbench {workload} gave no usable report: {exc}",
                           detail="\n".join(out.splitlines()[-15:])) from None


HANDLERS: dict[str, Handler] = {
    "prepare": prepare,
    "apply_layout": apply_layout,
    "delete_random": delete_random,
    "sql": sql,
    "measure": measure,
}
