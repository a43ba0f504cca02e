"""One run of a scenario: plan (all input checks, before any work), then execute
the steps on a throwaway server and build the result.

Data flows one way: scenario file -> resolved scenario -> server + sysbench ->
result dict (written by `result.write_result`).
"""

from __future__ import annotations

import datetime as dt
import os
import shlex
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from . import collectors, hostinfo, sysbench
from . import loader
from .capabilities import Requested, UnknownOption, normalize, plan_config
from .errors import BadInput, InfraFailure
from .flavor import identify
from .mycnf import check_not_reserved
from .progress import Progress
from .quiesce import quiesce
from .providers import open_provider
from .results import RESULT_SCHEMA
from .baseline import slug
from .snapshots import Lookup, SnapshotCache, data_prefix, shrink_redo, snapshot_spec, spec_key
from .scenario import (ApplyLayoutStep, DeleteRandomStep, MeasureStep, PrepareStep, ResolvedScenario,
                       SqlStep, cases, config_text, load_scenario, resolve)

DATABASE = "sbtest"


@dataclass
class RunPlan:
    """Everything checked and decided before a server starts."""

    resolved: ResolvedScenario
    scenario_file: Path
    provider: object
    requested: list[Requested]
    config_options: dict
    config_notes: list[dict]
    server_spec: str
    argv: list[str] = field(default_factory=list)
    skip_reason: str | None = None  # the case cannot run as specified on this server
    snapshots: SnapshotCache | None = None  # None: always prepare


def _utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def plan_runs(scenario_arg: str, profile: str, server_spec: str, overrides: list[Requested],
              parent: Path, case_patterns: list[str] | None = None, argv: list[str] | None = None,
              snapshots: SnapshotCache | None = None) -> list[RunPlan]:
    """One plan per case of the scenario at `profile` (one workdir under `parent` each).
    `snapshots`: the cache to use where the scenario allows it (None: always prepare)."""
    scenario, path = load_scenario(scenario_arg)
    sysbench.version()  # fails early with an install hint
    plans = []
    for resolved in cases(scenario, profile, str(path), case_patterns):
        workdir = parent / f"perfci-{uuid.uuid4().hex[:8]}"
        plans.append(use_snapshots(_plan_case(resolved, path, server_spec, overrides, workdir, argv or []), snapshots))
    return plans


def use_snapshots(plan: RunPlan, cache: SnapshotCache | None) -> RunPlan:
    """Let the plan restore/save its dataset where the scenario and provider allow it."""
    r = plan.resolved
    if cache is not None and r.snapshot and plan.provider.supports_snapshots and data_prefix(r):
        plan.snapshots = cache
    return plan


def plan_run(scenario_arg: str, profile: str, server_spec: str, overrides: list[Requested],
             workdir: Path, argv: list[str] | None = None, case_pattern: str | None = None) -> RunPlan:
    """The plan of one case (A/B compares one case): the first case matching
    `case_pattern`, or the profile's first case of a matrix scenario."""
    scenario, path = load_scenario(scenario_arg)
    sysbench.version()
    resolved = cases(scenario, profile, str(path), [case_pattern] if case_pattern else None)[0]
    return _plan_case(resolved, path, server_spec, overrides, workdir, argv or [])


def _plan_case(resolved: ResolvedScenario, path: Path, server_spec: str, overrides: list[Requested],
               workdir: Path, argv: list[str]) -> RunPlan:
    requested = [Requested(k, v, "scenario") for k, v in resolved.config.items()]
    for req in requested:
        check_not_reserved(req.name, f"{path}: server.config")
    requested += overrides
    provider = open_provider(server_spec, workdir)
    try:
        plan = plan_config(requested, provider.identity, provider.known_options())
    except UnknownOption as exc:
        raise BadInput(f"--config: {exc}; nothing was run") from None
    except ValueError as exc:
        raise BadInput(f"server config: {exc}") from None
    return RunPlan(resolved, path, provider, requested, plan.options, plan.notes, server_spec, argv,
                   skip_reason=_unsupported_axis_option(resolved, plan.notes))


def _unsupported_axis_option(resolved: ResolvedScenario, notes: list[dict]) -> str | None:
    """A case whose axis sets an option this server skips would silently run as
    another case: it is skipped instead, with the reason."""
    wanted = {normalize(o) for o in resolved.axis_options}
    for note in notes:
        if note["option"] in wanted and note["action"] == "skipped":
            return f"{note['option']}={config_text(note['value'])} is not supported: {note['reason']}"
    return None


def _ignored_axis_option(resolved: ResolvedScenario, effective: dict) -> str | None:
    """An axis option the server accepted but does not report as set (ignored)."""
    for name in resolved.axis_options:
        want = config_text(resolved.config[name])
        have = effective.get(normalize(name))
        if have is None:
            return f"{normalize(name)}={want}: the running server has no such variable"
        if str(have).lower() != want.lower():
            return f"{normalize(name)}={want}: the server ignored it (it reports {have!r})"
    return None


class ScenarioExecution:
    """Runs the steps of a resolved scenario against a started server."""

    def __init__(self, plan: RunPlan, progress: Progress, logs_dir: Path):
        self.plan = plan
        self.resolved = plan.resolved
        self.server = plan.provider
        self.progress = progress
        self.logs_dir = logs_dir
        self.steps: list[dict] = []
        self.phases: dict[str, dict] = {}
        self.bench_conn: sysbench.Connection | None = None

    # ---------------------------------------------------------------- setup

    def setup(self) -> dict:
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT VERSION(), @@version_comment")
            version, comment = cur.fetchone()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
            self.bench_conn = self.server.bench_connection(cur, DATABASE)
        running = identify(version, comment)
        return {"flavor": running.flavor, "version": str(running.version),
                "full_version": running.full_version, "version_comment": running.comment}

    def table_states(self) -> dict:
        """Row count and CHECKSUM TABLE of every table: the identity of a dataset."""
        out = {}
        with self.server.connect(DATABASE) as conn, conn.cursor() as cur:
            for table in self.resolved.table_names():
                cur.execute(f"SELECT COUNT(*) FROM {table}")
                rows = cur.fetchone()[0]
                cur.execute(f"CHECKSUM TABLE {table}")
                out[table] = {"rows": rows, "checksum": cur.fetchone()[1]}
        return out

    def wait_buffer_pool_load(self, timeout_s: float = 300) -> str:
        """After a restart: let the buffer pool dump taken at shutdown load, so a
        restored and a freshly prepared dataset start equally warm."""
        deadline = time.monotonic() + timeout_s
        status = ""
        with self.server.connect() as conn, conn.cursor() as cur:
            while time.monotonic() < deadline:
                cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_load_status'")
                row = cur.fetchone()
                status = row[1] if row else ""
                if not status or "completed" in status or "not started" in status.lower() \
                        or "abort" in status.lower() or "cannot" in status.lower():
                    break
                time.sleep(0.5)
        return status

    def effective_config(self) -> dict:
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SHOW GLOBAL VARIABLES")
            return {name: value for name, value in cur.fetchall()}

    # ---------------------------------------------------------------- steps

    def run_steps(self, steps: list) -> None:
        for step in steps:
            label = f"{step.kind} {step.name}" if step.kind != "measure" else f"measure {step.phase}"
            started = _utc_now()
            cmp_before = None
            if not isinstance(step, MeasureStep):
                with self.server.connect() as conn:
                    cmp_before = collectors.cmp_snapshot(conn)
            t0 = time.monotonic()
            with self.progress.step(label):
                try:
                    detail = self._dispatch(step)
                except pymysql.err.MySQLError as exc:  # e.g. the server went away mid-step
                    raise InfraFailure(f"step {step.name}: server error: {exc.args[-1] if exc.args else exc}") from None
            record = {"name": step.name, "kind": step.kind, "started_at": started,
                      "duration_s": round(time.monotonic() - t0, 3), **detail}
            with self.server.connect() as conn:
                record["sizes_after"] = collectors.tablespace_sizes(conn, self.server.identity, DATABASE)
                if cmp_before is not None:  # compression work of loads, index builds, ALTERs
                    record["innodb_cmp"] = collectors.cmp_delta(cmp_before, collectors.cmp_snapshot(conn))
                    record["compress_miss_rate"] = collectors.miss_rate(record["innodb_cmp"])
            self.steps.append(record)

    def _dispatch(self, step) -> dict:
        if isinstance(step, PrepareStep):
            return self._prepare(step)
        if isinstance(step, ApplyLayoutStep):
            return self._sql_per_table([self._layout_sql()])
        if isinstance(step, DeleteRandomStep):
            return self._delete_random(step)
        if isinstance(step, SqlStep):
            return self._sql_per_table(step.statements)
        if isinstance(step, MeasureStep):
            return self._measure(step)
        raise AssertionError(f"unhandled step kind {step.kind}")

    def _prepare(self, step: PrepareStep) -> dict:
        ds = self.resolved.dataset
        if step.loader == "perfci":
            return self._load(step)
        if ds.payload != "sysbench":
            raise BadInput(f"{self.plan.scenario_file}: case {self.resolved.case}: payload {ds.payload!r} "
                           "needs the perfci loader (prepare step `loader: perfci`)")
        options = {"tables": ds.tables, "table-size": ds.rows,
                   "threads": max(1, min(ds.tables, os.cpu_count() or 1)), **step.options}
        args = sysbench.command(step.workload, "prepare", self.bench_conn, options)
        sysbench.run(args, log_path=self.logs_dir / f"{step.name}.log")
        return {"command": sysbench.shown(args)}

    def _load(self, step: PrepareStep) -> dict:
        ds = self.resolved.dataset
        with self.server.connect(DATABASE) as conn:
            for i, table in enumerate(self.resolved.table_names(), start=1):
                loader.load_table(conn, table, ds, step.seed * 1000 + i,
                                  lambda n, t=table: self.progress.update(f"{t}: {n} rows"))
        return {"loader": "perfci", "payload": ds.payload, "rows_loaded": ds.rows * ds.tables,
                "create_table": loader.create_table_sql("sbtest1", ds)}

    def _layout_sql(self) -> str:
        ds = self.resolved.dataset
        clauses = [f"ADD INDEX {ix.name} ({', '.join(ix.columns)})" for ix in ds.indexes]
        if ds.row_format:
            clauses.append(f"ROW_FORMAT={ds.row_format}")
        if ds.key_block_size:
            clauses.append(f"KEY_BLOCK_SIZE={ds.key_block_size}")
        if not clauses:
            raise BadInput(f"{self.plan.scenario_file}: step apply_layout: the dataset declares no indexes, "
                           "row_format or key_block_size to apply")
        return "ALTER TABLE {table} " + ", ".join(clauses)

    def _execute(self, statements: list[str]) -> list[dict]:
        done = []
        with self.server.connect(DATABASE) as conn, conn.cursor() as cur:
            for sql in statements:
                t0 = time.monotonic()
                try:
                    cur.execute(sql)
                except pymysql.err.MySQLError as exc:
                    raise InfraFailure(f"SQL failed: {sql}: {exc.args[-1] if exc.args else exc}") from None
                done.append({"sql": sql, "duration_s": round(time.monotonic() - t0, 3), "rows": cur.rowcount})
        return done

    def _sql_per_table(self, statements: list[str]) -> dict:
        expanded = []
        for name, value in self.resolved.vars.items():  # a case's axis variables
            statements = [sql.replace("{" + name + "}", value) for sql in statements]
        for sql in statements:  # a statement naming {table} runs once per dataset table
            expanded += [sql.replace("{table}", t) for t in self.resolved.table_names()] if "{table}" in sql else [sql]
        return {"statements": self._execute(expanded)}

    def _delete_random(self, step: DeleteRandomStep) -> dict:
        """Delete a reproducible pseudo-random fraction: CRC32 of (id, seed) decides."""
        threshold = int(step.fraction * 1_000_000)
        deleted, remaining = 0, 0
        with self.server.connect(DATABASE) as conn, conn.cursor() as cur:
            for table in self.resolved.table_names():
                cur.execute(f"SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id), -1) FROM {table}")
                lo, hi = cur.fetchone()
                for start in range(lo, hi + 1, step.chunk_rows):
                    end = min(start + step.chunk_rows - 1, hi)
                    cur.execute(f"DELETE FROM {table} WHERE id BETWEEN {start} AND {end} "
                                f"AND CRC32(CONCAT(id, ':', {step.seed})) % 1000000 < {threshold}")
                    deleted += cur.rowcount
                    self.progress.update(f"{table}: {deleted} rows deleted")
                cur.execute(f"SELECT COUNT(*) FROM {table}")
                remaining += cur.fetchone()[0]
        return {"rows_deleted": deleted, "rows_remaining": remaining}

    def _measure(self, step: MeasureStep) -> dict:
        wl = self.resolved.workload
        threads = step.threads or wl.threads
        seconds = step.time or wl.time
        options = {"tables": self.resolved.dataset.tables, "table-size": self.resolved.dataset.rows,
                   "threads": threads, "time": seconds, "report-interval": wl.report_interval,
                   **step.options}
        args = sysbench.command(step.workload, "run", self.bench_conn, options)
        q = self.resolved.quiesce
        quiet = {}
        if q.purge or q.flush_dirty_pages:
            self.progress.update("quiescing: purge and flush before measuring")
            with self.server.connect() as conn:
                quiet = quiesce(conn, q.purge, q.flush_dirty_pages, q.timeout_s)
            if quiet["timed_out"]:
                self.progress.info(f"  note: quiesce before {step.phase} timed out after {q.timeout_s}s: {quiet}")
        with self.server.connect() as conn:
            sizes_before = collectors.tablespace_sizes(conn, self.server.identity, DATABASE)
            snap_before = collectors.snapshot(conn, self.server.pid)

        def on_line(line: str) -> None:
            iv = sysbench.parse_interval(line)
            if iv:
                self.progress.update(f"[{iv['t']:.0f}/{seconds}s] tps {iv['tps']:.1f} qps {iv['qps']:.1f}")

        out = sysbench.run(args, on_line=on_line, log_path=self.logs_dir / f"measure-{step.phase}.log")
        with self.server.connect() as conn:
            snap_after = collectors.snapshot(conn, self.server.pid)
            gauges_after = collectors.gauges(conn)
            sizes_after = collectors.tablespace_sizes(conn, self.server.identity, DATABASE)
        try:
            report = sysbench.parse_report(out)
        except ValueError as exc:
            raise InfraFailure(f"sysbench {step.workload} gave no usable report: {exc}",
                               detail="\n".join(out.splitlines()[-15:])) from None
        counters = collectors.delta(snap_before, snap_after)
        metrics = {**report["metrics"], **collectors.derived(counters, report["metrics"])}
        self.phases[step.phase] = {
            "workload": step.workload,
            "threads": threads,
            "time_s": seconds,
            "command": sysbench.shown(args),
            "quiesce": quiet,
            "sysbench_version": report["sysbench_version"],
            "metrics": metrics,
            "counters": counters,
            "gauges_after": gauges_after,
            "intervals": report["intervals"],
            "sizes_before": sizes_before,
            "sizes_after": sizes_after,
        }
        return {"phase": step.phase}

    def headline(self) -> dict:
        out = {}
        for h in self.resolved.headline:
            num = self.phases[h.numerator]["metrics"].get(h.metric)
            den = self.phases[h.denominator]["metrics"].get(h.metric)
            key = f"{h.metric} {h.numerator}/{h.denominator}"
            out[key] = round(num / den, 4) if num is not None and den else None
        return out


class _SnapshotUse:
    """One run's use of the snapshot cache: restore, or prepare then save."""

    def __init__(self, plan: RunPlan):
        self.plan = plan
        self.cache = plan.snapshots
        self.spec = snapshot_spec(plan.resolved, plan.provider.identity, plan.config_options)
        self.key = spec_key(self.spec)
        self.found: Lookup | None = None

    def lookup(self) -> Path | None:
        self.found = self.cache.lookup(self.key, self.plan.provider.identity.full_version)
        return self.found.datadir

    def restored(self, execution: "ScenarioExecution", start_s: float) -> dict:
        manifest = self.found.manifest
        with execution.progress.step("verify restored dataset"):
            bp = execution.wait_buffer_pool_load()
            tables = execution.table_states()
        if tables != manifest["tables"]:
            raise InfraFailure(f"snapshot {self.key}: restored tables differ from the manifest "
                               f"({tables} vs {manifest['tables']}); remove {self.cache.root / self.key}")
        with self.plan.provider.connect() as conn:
            sizes = collectors.tablespace_sizes(conn, self.plan.provider.identity, DATABASE)
        execution.steps.append({"name": "restore-snapshot", "kind": "snapshot_restore", "duration_s": round(start_s, 3),
                                "replaces": [s["name"] for s in manifest["steps"]], "buffer_pool_load": bp,
                                "sizes_after": sizes})
        return {"tables": tables, "snapshot": {"key": self.key, "restored": True, "note": self.found.note,
                                               "created_at": manifest["created_at"], "bytes": manifest["bytes"],
                                               "prepared_steps": manifest["steps"], "restore_s": round(start_s, 3)}}

    def prepare_and_save(self, execution: "ScenarioExecution") -> dict:
        r, server = self.plan.resolved, self.plan.provider
        execution.run_steps(data_prefix(r))
        tables = execution.table_states()
        with execution.progress.step("snapshot: slow shutdown, copy the datadir, restart"):
            with server.connect() as conn:
                shrink_redo(conn, server.identity)
            clean = server.stop(slow=True)
            entry = self.cache.save(self.key, self.spec, server.datadir,
                                    {"flavor": server.identity.flavor, "full_version": server.identity.full_version},
                                    clean, tables, execution.steps[:])
            server.start(self.plan.config_options)  # the same datadir, as cold as a restore
            execution.setup()
            bp = execution.wait_buffer_pool_load()
        note = self.found.note if entry else "the shutdown was not clean: snapshot not saved"
        return {"tables": tables, "snapshot": {"key": self.key, "restored": False, "saved": entry is not None,
                                               "note": note, "buffer_pool_load": bp}}


def reproduce_command(plan: RunPlan) -> str:
    args = ["perfci", "run", plan.resolved.name, "--profile", plan.resolved.profile, "--server", plan.server_spec]
    if plan.resolved.case != "default":
        args += ["--case", plan.resolved.case]
    for req in plan.requested:
        if req.origin == "override":
            args += ["--config", req.name if req.value is None else f"{req.name}={req.value}"]
    return shlex.join(args)


def execute(plan: RunPlan, progress: Progress, keep_workdir: bool = False, runner_class: str = "local") -> dict:
    """Start the server, run every step, shut down; return the result (not yet written).
    A case the server cannot run as specified gives a `skipped` result with the reason."""
    server = plan.provider
    r = plan.resolved
    started = _utc_now()
    t0 = time.monotonic()
    host = {"runner_class": runner_class, **hostinfo.fingerprint(server.workdir), "check": hostinfo.host_check()}
    for warning in host["check"]["warnings"]:
        progress.info(f"  warning: {warning}")
    case = "" if r.case == "default" else f" case {r.case}"
    progress.info(f"perfci: {r.name} --profile {r.profile}{case} on {server.identity.label} ({server.where}); "
                  f"expected ~{r.expected_minutes:g} min")
    for note in plan.config_notes:
        progress.info(f"  note: {note['option']} {note['action']}: {note['reason']}")
    skip_reason = plan.skip_reason
    server_info: dict = {"flavor": server.identity.flavor, "version": str(server.identity.version)}
    effective: dict = {}
    execution = None
    dataset: dict = {}
    if skip_reason is None:
        try:
            snap = _SnapshotUse(plan) if plan.snapshots else None
            restore = snap.lookup() if snap else None
            t_start = time.monotonic()
            with progress.step("start server" + (" from the dataset snapshot" if restore else "")):
                server.start(plan.config_options, restore_from=restore)
            logs_dir = server.workdir / "logs"
            logs_dir.mkdir(parents=True, exist_ok=True)
            execution = ScenarioExecution(plan, progress, logs_dir)
            server_info = execution.setup()
            effective = execution.effective_config()
            skip_reason = _ignored_axis_option(r, {normalize(k): v for k, v in effective.items()})
            if skip_reason is None and snap:
                dataset = snap.restored(execution, time.monotonic() - t_start) if restore \
                    else snap.prepare_and_save(execution)
                execution.run_steps(r.steps[len(data_prefix(r)):])
                effective = execution.effective_config()
            elif skip_reason is None:
                execution.run_steps(r.steps)
                effective = execution.effective_config()
        finally:
            with progress.step("shut down server"):
                server.stop()
            server.cleanup(keep_workdir)
    else:
        server.cleanup(keep_workdir)
    if skip_reason:
        progress.info(f"  skipped: {skip_reason}")
    requested = {req.name: req.value for req in plan.requested if req.origin == "scenario"}
    overrides = {req.name: req.value for req in plan.requested if req.origin == "override"}
    ran = execution is not None and skip_reason is None
    return {
        "schema": RESULT_SCHEMA,
        "id": f"{r.name}-{r.profile}-{'' if r.case == 'default' else slug(r.case) + '-'}"
              f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}",
        "status": "ok" if ran else "skipped",
        "skip_reason": skip_reason,
        "case": r.case,
        "axes": r.axes,
        "started_at": started,
        "finished_at": _utc_now(),
        "duration_s": round(time.monotonic() - t0, 3),
        "harness": {**hostinfo.harness_revision(), "sysbench": sysbench.version()},
        "host": host,
        "server": {
            **server.describe(),
            **server_info,
            "config": {"scenario": requested, "overrides": overrides, "written": plan.config_options},
            "effective_config": effective,
        },
        "scenario": {
            "name": r.name,
            "profile": r.profile,
            "file": str(plan.scenario_file),
            "hash": r.content_hash(),
            "resolved": r.model_dump(mode="json"),
        },
        "dataset": dataset,
        "steps": execution.steps if ran else [],
        "phases": execution.phases if ran else {},
        "headline": execution.headline() if ran else {},
        "notes": plan.config_notes,
        "reproduce": reproduce_command(plan),
    }
