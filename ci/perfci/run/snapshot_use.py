"""One run's use of the dataset snapshot cache: restore the dataset, or prepare it
and save it (slow shutdown, copy, restart on the same datadir so both paths
measure from an equally cold start)."""

from __future__ import annotations

from pathlib import Path

from perfci.model.result import DatasetState, SnapshotRecord, Step
from perfci.run.plan import RunPlan
from perfci.run.snapshots import Lookup, SnapshotCache, SnapshotServer, data_prefix, small_redo_restart, snapshot_spec, spec_key
from perfci.run.steps import StepContext, run_steps
from perfci.util.errors import InfraFailure


class SnapshotUse:
    def __init__(self, plan: RunPlan, cache: SnapshotCache):
        self.plan = plan
        self.cache = cache
        self.spec = snapshot_spec(plan.resolved, plan.provider.identity, plan.config_options, plan.sysbench,
                                  plan.provider.kind)
        self.key = spec_key(self.spec)
        self.found: Lookup | None = None

    def lookup(self) -> Path | None:
        """The snapshot datadir to start from, or None: prepare (and save) instead."""
        self.found = self.cache.lookup(self.key, self.plan.provider.identity.full_version)
        return self.found.datadir

    def restored(self, ctx: StepContext, start_s: float) -> DatasetState:
        """Check a restored dataset against its manifest and record the restore as a step."""
        assert self.found is not None and self.found.manifest is not None
        manifest = self.found.manifest
        with ctx.progress.step("verify restored dataset"):
            bp = ctx.inspector.wait_buffer_pool_load()
            tables = ctx.inspector.table_states(ctx.resolved.table_names())
        expected = {name: state for name, state in manifest["tables"].items()}
        if {k: v.model_dump() for k, v in tables.items()} != expected:
            raise InfraFailure(f"snapshot {self.key}: restored tables differ from the manifest "
                               f"({ {k: v.model_dump() for k, v in tables.items()} } vs {expected}); "
                               f"remove {self.cache.root / self.key}")
        ctx.steps.append(Step(name="restore-snapshot", kind="snapshot_restore", duration_s=round(start_s, 3),
                              replaces=[s["name"] for s in manifest["steps"]], buffer_pool_load=bp,
                              sizes_after=ctx.inspector.sizes()))
        return DatasetState(tables=tables, snapshot=SnapshotRecord(
            key=self.key, restored=True, note=self.found.note, created_at=manifest["created_at"],
            bytes=manifest["bytes"], prepared_steps=manifest["steps"], restore_s=round(start_s, 3)))

    def prepare_and_save(self, ctx: StepContext) -> DatasetState:
        """Run the data steps, then save the datadir after a slow shutdown and restart on it."""
        server = self.plan.provider
        run_steps(ctx, data_prefix(self.plan.resolved))
        tables = ctx.inspector.table_states(ctx.resolved.table_names())
        with ctx.progress.step("snapshot: slow shutdown, copy the datadir, restart"):
            ctx.inspector.prepare_snapshot_shutdown()
            clean = server.stop(slow=True)
            small_redo = small_redo_restart(server.identity, self.plan.config_options)
            if clean and small_redo:
                server.start(small_redo)
                clean = server.stop()
            entry = self.cache.save(self.key, self.spec, server.datadir,
                                    SnapshotServer(flavor=server.identity.flavor,
                                                   full_version=server.identity.full_version),
                                    clean, {k: v.model_dump() for k, v in tables.items()},
                                    [s.model_dump(mode="json") for s in ctx.steps])
            server.start(self.plan.config_options)  # the same datadir, as cold as a restore
            ctx.inspector.setup()
            bp = ctx.inspector.wait_buffer_pool_load()
        note = (self.found.note if self.found else "") if entry else "the shutdown was not clean: snapshot not saved"
        return DatasetState(tables=tables, snapshot=SnapshotRecord(
            key=self.key, restored=False, saved=entry is not None, note=note, buffer_pool_load=bp))
