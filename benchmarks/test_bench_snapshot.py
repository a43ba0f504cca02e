"""Restoring a dataset snapshot vs preparing it again, on a real server.

Prepare = initialise + start + the scenario's data steps; restore = copy the saved
datadir + start + buffer pool load. Both sides' tables (row count, CHECKSUM TABLE)
must be equal, and the restore at least MIN_RATIO times faster.

    pytest benchmarks --benchmark-only -k snapshot                      # smoke profile
    PERFCI_BENCH_PROFILE=nightly pytest benchmarks --benchmark-only -k snapshot
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from perfci.run.inspect import SqlInspector, logs_dir
from perfci.run.plan import RunPlan, plan_runs
from perfci.run.snapshot_use import SnapshotUse
from perfci.run.snapshots import SnapshotCache
from perfci.run.steps import HANDLERS, StepContext
from perfci.util.progress import Progress

SCENARIO = "rebuild-after-delete"
PROFILE = os.environ.get("PERFCI_BENCH_PROFILE", "smoke")
MIN_RATIO = 5.0 if PROFILE == "smoke" else 10.0
pytestmark = pytest.mark.server


def _context(plan: RunPlan, inspector: SqlInspector) -> StepContext:
    _, bench = inspector.setup()
    return StepContext(plan.resolved, plan.scenario_file, plan.provider, inspector, Progress(quiet=True),
                       logs_dir(plan.provider), bench, HANDLERS)


def prepare_and_save(cache: SnapshotCache, workdir: Path) -> tuple[float, dict]:
    [plan] = plan_runs(SCENARIO, PROFILE, "local", [], workdir, snapshots=cache)
    server, inspector = plan.provider, SqlInspector(plan.provider)
    use = SnapshotUse(plan, cache)
    use.lookup()
    t0 = time.monotonic()
    try:
        server.start(plan.config_options)
        started_s = time.monotonic() - t0  # initialise + start
        ctx = _context(plan, inspector)
        state = use.prepare_and_save(ctx, restart=lambda: server.start(plan.config_options))
        elapsed = started_s + sum(step.duration_s for step in ctx.steps)  # + the data steps, not the saving
    finally:
        server.stop()
        server.cleanup()
    assert state.snapshot and state.snapshot.saved
    return elapsed, {k: v.model_dump() for k, v in state.tables.items()}


def restore(cache: SnapshotCache, workdir: Path) -> tuple[float, dict]:
    [plan] = plan_runs(SCENARIO, PROFILE, "local", [], workdir, snapshots=cache)
    server, inspector = plan.provider, SqlInspector(plan.provider)
    use = SnapshotUse(plan, cache)
    t0 = time.monotonic()
    try:
        server.start(plan.config_options, restore_from=use.lookup())
        ctx = _context(plan, inspector)
        ctx.inspector.wait_buffer_pool_load()
        elapsed = time.monotonic() - t0
        tables = {k: v.model_dump() for k, v in inspector.table_states(plan.resolved.table_names()).items()}
    finally:
        server.stop()
        server.cleanup()
    return elapsed, tables


def test_snapshot_restore_vs_prepare(benchmark, tmp_path):
    if not shutil.which("sysbench"):
        pytest.skip("needs sysbench and a server (scripts/install-deps)")
    cache = SnapshotCache(tmp_path / "snapshots")
    prepare_s, fresh = prepare_and_save(cache, tmp_path)
    timings: list[float] = []

    def one_restore() -> dict:
        elapsed, tables = restore(cache, tmp_path)
        timings.append(elapsed)
        return tables

    restored = benchmark.pedantic(one_restore, rounds=3, iterations=1)  # type: ignore[arg-type]
    ratio = prepare_s / min(timings)
    benchmark.extra_info.update({"scenario": SCENARIO, "profile": PROFILE, "prepare_s": round(prepare_s, 2),
                                 "restore_s": round(min(timings), 2), "ratio": round(ratio, 1)})
    print(f"\n{SCENARIO} {PROFILE}: prepare {prepare_s:.1f} s, restore {min(timings):.2f} s: {ratio:.0f}x")
    assert restored == fresh
    assert ratio >= MIN_RATIO
