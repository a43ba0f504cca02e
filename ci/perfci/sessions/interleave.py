"""Interleaved A/B: both servers alive side by side, the measured phases run as
alternating fixed-work bursts.

Both sides start from the same dataset (the snapshot, or the same seeded data
steps), run the same non-measure steps, and walk through the same sequence of
seeded transactions: burst k of a phase runs `burst_transactions` transactions with
`--rand-seed = rand_seed + k` on A and on B, in the order A B, B A, A B, ... (ABBA:
a linear drift of the host within two pairs weighs on both sides alike). The side
not measured is frozen (host/freezer.py), so its background threads do not take CPU
from the measured one. The first `warmup` pairs of each phase are dropped; the
rest are paired burst by burst (judge/paired.py judges them).

An A/B runs `instances` such pairs of servers one after the other, each from a fresh
restore: whatever makes one server instance differ from another (its setup history,
where its pages landed) is constant over its bursts and only averages out over
instances. Each instance pair draws which side restores, starts and is measured first
(a side measured first in every pair would carry the order's bias into the verdict).

Everything is checked before a server starts: both sides' plans, every measured
phase splittable into bursts (fixed work), both buffer pools fitting in memory.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from perfci.host import hostinfo
from perfci.host.freezer import Freezer, freezer_for
from perfci.judge.burst_verdicts import TIME_METRICS
from perfci.model.bursts import Burst, InstancePair, InterleavedRun, SideInfo
from perfci.model.flavor import ServerInfo
from perfci.model.identity import server_line
from perfci.model.metrics import TAIL_LATENCIES, WORK_METRIC
from perfci.model.scenario import MeasureStep, cases, load_scenario
from perfci.providers.basedirs import build_provenance
from perfci.providers.capabilities import parse_size
from perfci.providers.local import LocalServer
from perfci.run import collectors, work
from perfci.run.counted import relaunch
from perfci.run.execute import explained
from perfci.run.inspect import SqlInspector, logs_dir
from perfci.run.plan import RunPlan, plan_run, use_snapshots, work_note
from perfci.run.snapshot_use import SnapshotUse
from perfci.run.snapshots import SnapshotCache, data_prefix
from perfci.run.steps import HANDLERS, StepContext, run_measured, run_steps, step_bursts, sysbench_options, utc_now
from perfci.sessions.rounds import Side
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.progress import Progress
from perfci.util.runner import temp_prefix

DEFAULT_WARMUP_PAIRS = 2


def pair_order(index: int, first: int = 0) -> tuple[int, int]:
    """Burst pair k -> which side goes first (0 = A): A B, B A, A B, ... when A is
    the instance pair's first side, B A, A B, ... when B is."""
    return (first, 1 - first) if index % 2 == 0 else (1 - first, first)


# ---------------------------------------------------------------- input checks


def check_splittable(plan: RunPlan, bursts: int | None) -> None:
    """Every measured phase must be fixed work (it is cut into bursts of equal work)."""
    r = plan.resolved
    if not r.workload.fixed_work and any(isinstance(s, MeasureStep) and not s.transactions for s in r.steps):
        phase = next(s.phase for s in r.steps if isinstance(s, MeasureStep) and not s.transactions)
        raise BadInput(f"{plan.scenario_file}: profile {r.profile}: phase {phase} is time-boxed (no "
                       "workload.transactions): it cannot be split into equal bursts; give the profile "
                       "`workload: {transactions: N}` or use `perfci ab --mode rounds`")
    if bursts is not None and bursts <= DEFAULT_WARMUP_PAIRS:
        raise BadInput(f"--bursts {bursts}: needs more than the {DEFAULT_WARMUP_PAIRS} warm-up pairs")


def check_memory(plans: list[RunPlan], available: int | None) -> None:
    """Both servers run at once: their buffer pools (and overhead) must fit in memory."""
    if available is None:
        return
    pools = [plan.config_options.get("innodb_buffer_pool_size") for plan in plans]
    need = hostinfo.servers_memory_need([parse_size(str(raw)) if raw is not None else None for raw in pools])
    if need > available:
        raise BadInput(f"interleaved A/B runs both servers at once: their buffer pools need ~{need / 2**30:.1f} GiB "
                       f"with overhead, this host has {available / 2**30:.1f} GiB available; use a smaller "
                       "profile, a smaller innodb_buffer_pool_size on both sides, or `--mode rounds`")


# ---------------------------------------------------------------- one side


@dataclass
class SideServer:
    side: Side
    plan: RunPlan
    progress: Progress
    inspector: SqlInspector = field(init=False)
    ctx: StepContext = field(init=False)
    freezer: Freezer = field(init=False)
    server_info: ServerInfo | None = None
    counter: work.WorkCounter | None = None  # counting work (run/work.py), else timing
    counted: list[str] = field(default_factory=list)  # the counter's launcher (empty: timing)
    functions: work.FunctionCounts | None = None  # the last counted burst's instructions per function (callgrind)

    @property
    def label(self) -> str:
        return self.side.name.upper()

    def start(self) -> None:
        """Start from the dataset snapshot (or prepare it, saving it for the other side)."""
        plan, server = self.plan, self.plan.provider
        self.inspector = SqlInspector(server)
        snap = SnapshotUse(plan, plan.snapshots) if plan.snapshots else None
        restore = snap.lookup() if snap else None
        local = server if isinstance(server, LocalServer) else None  # the only kind counted
        self.counted = list(local.launcher) if local else []
        if local and self.counted and not restore:  # loaded natively: minutes faster
            local.launcher = []
        t0 = time.monotonic()
        with self.progress.step(f"start server {self.label}" + (" from the dataset snapshot" if restore else "")):
            server.start(plan.config_options, restore_from=restore)
        self.server_info, bench = self.inspector.setup()
        self.ctx = StepContext(plan.resolved, plan.scenario_file, server, self.inspector, self.progress,
                               logs_dir(server), bench, HANDLERS)
        if snap and restore:
            snap.restored(self.ctx, time.monotonic() - t0)
        elif snap:
            if local:
                local.launcher = self.counted  # it restarts on the saved datadir, under its counter
            snap.prepare_and_save(self.ctx)
        else:
            run_steps(self.ctx, data_prefix(plan.resolved))
            if self.counted:  # the same datadir again, under its counter
                self.relaunch(self.counted, "under its work counter")
        self.attach()

    def attach(self) -> None:
        """The freezer (and the counter) of the server process now running."""
        server = self.plan.provider
        container = getattr(server, "container", None) if server.kind == "docker" else None
        self.freezer = freezer_for(server.pid, container,
                                   send=server.send_signal if isinstance(server, LocalServer) else None)
        if self.plan.work is not None:
            self.counter = work.counter_for(self.plan.work, server)

    def release_freezer(self) -> None:
        self.freezer.release()  # the latest one: a counted side gets a new process after an unmeasured step

    def relaunch(self, launcher: list[str], how: str) -> None:
        """Stop the server and start it again on the same datadir behind `launcher` (its
        counter, or none: native)."""
        server = self.plan.provider
        assert isinstance(server, LocalServer)
        relaunch(server, launcher, self.plan.config_options, self.progress, f"restart server {self.label} {how}")
        self.server_info, self.ctx.bench = self.inspector.setup()

    def run_unmeasured(self, steps: list) -> None:
        """Steps between measured phases (a rebuild, a bulk change; called thawed). A
        counted server runs them natively (under callgrind one ALTER TABLE of a smoke
        table took 4 minutes) and restarts under its counter: only bursts are counted."""
        if not self.counted:
            run_steps(self.ctx, steps)
            return
        old = self.freezer
        self.relaunch([], "natively for " + ", ".join(step.name for step in steps))
        run_steps(self.ctx, steps)
        self.relaunch(self.counted, "under its work counter")
        old.release()  # its group is empty now: the new process gets a freezer of its own
        self.attach()
        self.freezer.thaw()  # the caller's `thawed` freezes it again

    def run_sql(self, statements: list[str]) -> None:
        with self.plan.provider.connect("sbtest") as conn, conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    def burst(self, step: MeasureStep, size: int, seed: int) -> tuple[float, dict[str, float], dict | None]:
        wl = self.plan.resolved.workload
        threads = step.threads if isinstance(step.threads, int) else wl.threads
        cap = (step.time or wl.time) * (work.SLOWDOWN_CAP if self.counter else 1)
        options = sysbench_options(self.ctx, step, threads, {"events": size, "time": cap, "rand-seed": seed})
        done = run_measured(self.ctx, step, options, counter=self.counter)
        self.functions = done.functions
        m = done.report.metrics
        if m["events"] < size:
            raise InfraFailure(f"side {self.label}: a burst of phase {step.phase} hit the {cap} s cap "
                               f"after {m['events']} of {size} transactions")
        metrics = burst_metrics(done.raw_counters(), m)
        if done.instructions is None:
            metrics.update(server_cpu_metrics(done.thread_cpu_ns, size, threads))
        else:  # counting: the server ran slowed down under its counter, time says nothing
            metrics = {k: v for k, v in metrics.items() if k not in TIME_METRICS}
            metrics[WORK_METRIC] = round(done.instructions / size, 1)
        return m["duration_s"], metrics, done.host_cpu


def server_cpu_metrics(deltas: list[int], transactions: int, threads: int) -> dict[str, float]:
    """The server's CPU per transaction in a burst, in microseconds: every thread
    (`server_cpu_us_per_txn`: statements and the background work they cause), and with
    one client thread the busiest server thread alone (`statement_cpu_us_per_txn`: the
    connection's statement path, which purge and page cleaning do not pay into)."""
    if not deltas or transactions <= 0:
        return {}
    out = {"server_cpu_us_per_txn": round(sum(deltas) / 1000 / transactions, 3)}
    if threads == 1:
        out["statement_cpu_us_per_txn"] = round(max(deltas) / 1000 / transactions, 3)
    return out


def side_info(s: SideServer, setup_sql: list[str]) -> SideInfo:
    assert s.server_info is not None, "side_info before the side's server started"
    info, (commit, build) = s.server_info, build_provenance(s.plan.provider.describe())
    return SideInfo(name=s.side.name, spec=s.side.server_spec, described=s.side.describe(), run=s.side.args(),
                    flavor=info["flavor"], full_version=info["full_version"],
                    line=server_line(info["flavor"], info["version"]), freezer=s.freezer.method, setup_sql=setup_sql,
                    commit=commit, build=build, work=work_note(s.plan))


def burst_metrics(raw: dict, report: dict) -> dict[str, float]:
    """A burst's numbers: throughput and latency, the derived per-transaction metrics
    and every counter that moved, per transaction."""
    events = report["events"]
    out = {k: float(report[k]) for k in ("tps", "qps", "latency_ms_avg", *TAIL_LATENCIES) if report.get(k) is not None}
    out.update({k: float(v) for k, v in collectors.derived(raw, report).items()
                if v is not None and k.endswith("_per_txn")})
    for group in ("innodb_metrics", "global_status", "innodb_cmp"):
        for name, value in raw.get(group, {}).items():
            out[f"{group}.{name}"] = value / events
    return out


@contextmanager
def both_running(sides: list[SideServer]) -> Iterator[None]:
    """Start the sides in this order (each frozen while the next starts); on the way
    out, thaw and stop both."""
    with ExitStack() as stack:
        for s in sides:
            stack.callback(s.plan.provider.cleanup)
            stack.push(_stopping(s))
        for s in sides:
            s.start()
            stack.callback(s.release_freezer)  # thawed before the server stops
            s.freezer.freeze()
        try:
            yield
        except (InfraFailure, OSError) as failure:
            for s in sides:
                if (news := explained(s.plan.provider, failure, f"server {s.label}")) is not failure:
                    raise news from failure
            raise


def _stopping(s: SideServer) -> Callable[..., bool]:
    """How a side's server ends when the A/B does: a clean shutdown, or at once when
    interrupted or failed (its datadir is thrown away; a server on a full disk would
    wait for space forever; a runner's SIGKILL follows its cancel within 10 s)."""
    def stop(exc_type: type[BaseException] | None, *_: object) -> bool:
        if exc_type is not None:
            why = "interrupted" if issubclass(exc_type, KeyboardInterrupt) else "the A/B failed"
            with s.progress.step(f"stop server {s.label} at once ({why})"):
                s.plan.provider.abandon()
        else:
            with s.progress.step(f"shut down server {s.label}"):
                s.plan.provider.stop()
        return False
    return stop


@contextmanager
def thawed(s: SideServer) -> Iterator[None]:
    s.freezer.thaw()
    try:
        yield
    finally:
        s.freezer.freeze()


# ---------------------------------------------------------------- the run


def why_not_interleaved(scenario: str, profile: str, sides: tuple[Side, Side], case: str | None) -> str | None:
    """Why the two sides' scenarios cannot run as interleaved bursts (a time-boxed phase,
    different steps, workload or dataset), from the scenario files alone; None: they can."""
    resolved = []
    for side in sides:
        loaded, path = load_scenario(side.scenario or scenario)
        r = cases(loaded, profile, str(path), [case] if case else None)[0]
        if not r.workload.fixed_work and any(isinstance(s, MeasureStep) and not s.transactions for s in r.steps):
            return f"side {side.name.upper()}: a measured phase is time-boxed"
        resolved.append(r)
    a, b = resolved
    if (a.steps, a.workload, a.dataset) != (b.steps, b.workload, b.dataset):
        return "the sides' scenarios differ in steps, workload or dataset"
    return None


def plan_sides(scenario: str, profile: str, sides: tuple[Side, Side], parent: Path,
               case: str | None, bursts: int | None, phases: tuple[str, ...] = (),
               work_counter: str | None = None) -> list[RunPlan]:
    """Both sides planned and checked; `work_counter` (auto, callgrind, pmu): they count
    their work instead of timing it (run/work.py)."""
    plans = []
    for side in sides:
        plan = plan_run(side.scenario or scenario, profile, side.server_spec, side.overrides,
                        parent / f"{temp_prefix()}ab-{side.name}-{uuid.uuid4().hex[:8]}", case_pattern=case,
                        phases=phases, work_counter=work_counter)
        if plan.skip_reason:
            raise BadInput(f"side {side.name.upper()} cannot run this case: {plan.skip_reason}")
        check_splittable(plan, bursts)
        plans.append(use_snapshots(plan, SnapshotCache()))
    a, b = (p.resolved for p in plans)
    if (a.steps, a.workload, a.dataset) != (b.steps, b.workload, b.dataset):
        raise BadInput(f"the sides' scenarios differ in steps, workload or dataset ({plans[0].scenario_file} vs "
                       f"{plans[1].scenario_file}): interleaved bursts need the same work on both; "
                       "use `perfci ab --mode rounds`")
    check_memory(plans, hostinfo.meminfo_bytes("MemAvailable"))
    return plans


def run_interleaved(plans: list[RunPlan], sides: tuple[Side, Side], progress: Progress, runner_class: str,
                    bursts: int | None = None, warmup: int = DEFAULT_WARMUP_PAIRS,
                    setup_sql: tuple[list[str], list[str]] = ([], []), instances: int = 1,
                    replan: Callable[[], list[RunPlan]] | None = None, order_seed: int | None = None,
                    stop: Callable[[InterleavedRun], tuple[Literal["interim", "budget"], str] | None] | None = None,
                    last_pair: Callable[[InterleavedRun, list[SideServer], int], None] | None = None,
                    alpha: float | None = None,
                    resize: Callable[[InterleavedRun], int | None] | None = None) -> InterleavedRun:
    """`instances` interleaved instance pairs of the planned sides; `replan` gives
    fresh plans (new work directories) for every instance pair after the first;
    `resize` sees the run so far after each pair and may plan another number of
    instance pairs (the sized A/B's internal pilot; never fewer than have run);
    `stop` sees the run so far after each pair but the last, and ends it early by
    saying why (a sequential A/B's interim look); `last_pair` gets the whole run and
    the last pair's servers (A, B; frozen) and which went first, before they stop
    (the explain pass); `alpha`: the level the run is judged at, recorded in it (None: ALPHA)."""
    if (instances > 1 or resize is not None) and replan is None:
        raise ValueError("several instance pairs need replan (each starts fresh servers)")
    resolved = plans[0].resolved
    started = utc_now()
    host = hostinfo.host_record(plans[0].provider.workdir, runner_class)  # the lock claim included
    rng = random.Random(order_seed)
    run_id = f"{resolved.name}-{resolved.profile}-ab-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"
    records: list[Burst] = []
    pairs: list[InstancePair] = []
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    infos: list[SideInfo] = []
    functions = FunctionTotals()
    per_pair = sum(2 * step_bursts(resolved.workload, s, bursts)[1] for s in resolved.steps
                   if isinstance(s, MeasureStep))
    progress.plan(instances * per_pair)  # every burst planned: the time left, on a terminal and in CI logs
    index = -1
    while index + 1 < instances:
        index += 1
        if index:
            plans = replan()  # type: ignore[misc]  # checked above
        first: Literal["a", "b"] = "a" if rng.choice("ab") == "a" else "b"
        pairs.append(InstancePair(index=index, first=first, started_at=utc_now()))
        if instances > 1:
            progress.info(f"== instance pair {index + 1} of {instances} ({first.upper()} first)")
        servers = [SideServer(side, plan, progress) for side, plan in zip(sides, plans)]
        ordered = servers if first == "a" else servers[::-1]
        with both_running(ordered):
            records += _instance_bursts(servers, index, 0 if first == "a" else 1, resolved, setup_sql, bursts, warmup,
                                        sizes, counts, progress, functions, f"instance pair {index + 1} of {instances}")
            infos = [side_info(s, sql) for s, sql in zip(servers, setup_sql)]
            run = InterleavedRun(
                id=run_id, scenario=resolved.name, profile=resolved.profile, case=resolved.case,
                scenario_hash=resolved.content_hash(), runner_class=runner_class, host=host, started_at=started,
                finished_at=utc_now(), burst_transactions=sizes, bursts_per_phase=counts, warmup_pairs=warmup,
                sides=infos, instances=list(pairs), planned_instances=instances, alpha=alpha, bursts=list(records),
                threads={s.phase: s.threads if isinstance(s.threads, int) else resolved.workload.threads
                         for s in resolved.steps if isinstance(s, MeasureStep)},
                measure="work" if plans[0].work is not None else "time", work_functions=functions.per_transaction(),
                work_inclusive=functions.per_transaction(inclusive=True),
                work_calls=functions.calls_per_transaction())
            resized = resize(run) if resize is not None else None
            if resized is not None and resized != instances:
                instances = max(resized, index + 1)
                progress.plan((instances - index - 1) * per_pair)
                run = run.model_copy(update={"planned_instances": instances})
            stopped = stop(run) if stop is not None and index + 1 < instances else None
            if stopped:
                run = run.model_copy(update={"stopped": stopped[0]})
            if last_pair is not None and (stopped or index + 1 == instances):
                last_pair(run, servers, 0 if first == "a" else 1)
        if stopped:
            progress.info(f"== stopped after instance pair {index + 1} of {instances}: {stopped[1]}")
            break
    progress.finish()
    return run


def _instance_bursts(servers: list[SideServer], instance: int, first: int, resolved, setup_sql, bursts: int | None,
                     warmup: int, sizes: dict[str, int], counts: dict[str, int], progress: Progress,
                     functions: FunctionTotals, where: str = "") -> list[Burst]:
    """One instance pair, both servers running: setup SQL, the steps after the
    dataset, every measured phase as burst pairs."""
    records: list[Burst] = []
    for s, statements in zip(servers, setup_sql):
        if statements:
            with thawed(s), progress.step(f"setup SQL on {s.label}"):
                s.run_sql(statements)
    for step in resolved.steps[len(data_prefix(resolved)):]:
        if not isinstance(step, MeasureStep):
            for s in servers:
                with thawed(s):
                    s.run_unmeasured([step])
            continue
        size, count = step_bursts(resolved.workload, step, bursts)
        counting = servers[0].counter is not None
        # counted bursts: a first pair of PROBE_TRANSACTIONS sizes the rest to take ~BURST_S under
        # the counter (5-50x slower than native), the same size in every later instance pair
        adapt = counting and step.phase not in sizes
        limit = size
        if counting:
            size = sizes.get(step.phase) or min(size, work.PROBE_TRANSACTIONS)
        for s in servers:
            with thawed(s), progress.step(f"quiesce {s.label} before {step.phase}"):
                s.inspector.quiesce(resolved)
        for k in range(count):
            durations = []
            for position, side_index in enumerate(pair_order(k, first)):
                s = servers[side_index]
                seed = resolved.workload.rand_seed + k
                with thawed(s):
                    duration, metrics, cpu = s.burst(step, size, seed)
                durations.append(duration)
                progress.advance(f"{where} · {step.phase}: burst {k + 1}/{count} on {s.label}")
                records.append(Burst(phase=step.phase, index=k, side=s.side.name, position=position,
                                     warmup=k < warmup, rand_seed=seed, transactions=size,
                                     duration_s=round(duration, 4), metrics=metrics, host_cpu=cpu,
                                     instance=instance))
                if s.functions is not None and k >= warmup:
                    functions.add(step.phase, s.side.name, s.functions, size)
            if adapt and k == 0:
                size = work.counted_burst_size(size, max(durations), limit)
        sizes[step.phase], counts[step.phase] = size, count
        progress.info(f"  {step.phase}: {count} burst pairs of {size} transactions "
                      f"({warmup} warm-up pairs dropped)")
    return records


@dataclass
class FunctionTotals:
    """Instructions per function (callgrind's own and inclusive costs) summed over a
    counted run's measured bursts, per phase and side, with the transactions they ran."""
    own: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    inclusive: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    transactions: dict[tuple[str, str], int] = field(default_factory=dict)
    calls: dict[tuple[str, str], dict[tuple[str, str], int]] = field(default_factory=dict)

    def add(self, phase: str, side: str, counts: work.FunctionCounts, transactions: int) -> None:
        for kept, counted in ((self.own, counts.own), (self.inclusive, counts.inclusive)):
            totals = kept.setdefault((phase, side), {})
            for name, count in counted.items():
                totals[name] = totals.get(name, 0) + count
        edges = self.calls.setdefault((phase, side), {})
        for edge, count in counts.calls.items():
            edges[edge] = edges.get(edge, 0) + count
        self.transactions[(phase, side)] = self.transactions.get((phase, side), 0) + transactions

    def per_transaction(self, floor: float = 0.001, inclusive: bool = False) -> dict[str, dict[str, dict[str, float]]]:
        """phase -> side -> function -> instructions per transaction, own (or inclusive);
        a function under `floor` of both sides' total instructions is left out (the
        bursts file stays small)."""
        tally = self.inclusive if inclusive else self.own
        out: dict[str, dict[str, dict[str, float]]] = {}
        for phase in sorted({p for p, _ in tally}):
            sides = {side: counts for (p, side), counts in tally.items() if p == phase}
            totals = {side: sum(self.own.get((phase, side), {}).values()) for side in sides}
            kept = {name for side, counts in sides.items() for name, n in counts.items() if n >= floor * totals[side]}
            out[phase] = {side: {name: round(counts.get(name, 0) / self.transactions[(phase, side)], 1)
                                 for name in sorted(kept)} for side, counts in sorted(sides.items())}
        return out

    def calls_per_transaction(self, floor: float = 0.0005) -> dict[str, dict[str, list[tuple[str, str, float]]]]:
        """phase -> side -> [caller, callee, instructions per transaction of those calls];
        an edge under `floor` of the side's total left out (too thin to draw)."""
        out: dict[str, dict[str, list[tuple[str, str, float]]]] = {}
        for (phase, side), edges in sorted(self.calls.items()):
            total = sum(self.own.get((phase, side), {}).values())
            n = self.transactions[(phase, side)]
            out.setdefault(phase, {})[side] = [(caller, callee, round(cost / n, 1))
                                               for (caller, callee), cost in sorted(edges.items())
                                               if cost >= floor * total]
        return out


