"""A provider, an inspector and step handlers that start nothing: the runner's
unit tests drive the real planning, dispatch, skip, snapshot and result-assembly
code with them. They record what the runner asked of them, in order."""

from __future__ import annotations

from pathlib import Path

from perfci.model.connection import Connection
from perfci.model.flavor import ServerIdentity, ServerInfo, Version
from perfci.model.result import Interval, Metrics, Phase, QuiesceOutcome, TableSize, TableState
from perfci.model.scenario import ResolvedScenario
from perfci.run.steps import ScenarioStep, StepContext, StepFields


class FakeProvider:
    kind = "local"
    supports_snapshots = True

    def __init__(self, workdir: Path, version: str = "10.11.19", flavor: str = "mariadb",
                 known: set[str] | None = None, calls: list[str] | None = None):
        self.workdir = Path(workdir)
        self.identity = ServerIdentity(flavor, Version.parse(version), f"{version}-{flavor}")
        self._known = known
        self.calls: list[str] = calls if calls is not None else []
        self.started_with: list[dict] = []
        self.died: tuple[str, str] | None = None  # what death() answers: set to make the server "die"

    @property
    def where(self) -> str:
        return "fake"

    @property
    def pid(self) -> int | None:
        return None

    @property
    def datadir(self) -> Path:
        return self.workdir / "data"

    def known_options(self) -> set[str] | None:
        return self._known

    commit: str | None = None  # a build: spec's commit, as LocalServer records it

    def describe(self) -> dict:
        described = {"provider": self.kind, "binary": "/fake/mariadbd"}
        return {**described, "commit": self.commit} if self.commit else described

    def start(self, options: dict, restore_from: Path | None = None) -> None:
        self.calls.append(f"start{' restore' if restore_from else ''}")
        self.started_with.append(dict(options))
        self.datadir.mkdir(parents=True, exist_ok=True)
        if restore_from is not None:
            (self.datadir / "restored-from").write_text(str(restore_from))
        else:
            (self.datadir / "ibdata1").write_text("pages")

    def stop(self, slow: bool = False) -> bool:
        self.calls.append(f"stop{' slow' if slow else ''}")
        return True

    def abandon(self) -> None:
        self.calls.append("abandon")

    def death(self) -> tuple[str, str] | None:
        return self.died

    def connect(self, database: str | None = None):
        raise AssertionError("the runner's unit tests use a fake inspector: no SQL")

    def bench_connection(self, cur, database: str) -> Connection:
        raise AssertionError("not used with the fake inspector")

    def cleanup(self, keep_workdir: bool = False) -> None:
        self.calls.append("cleanup")


class FakeInspector:
    """Server-side reads with fixed answers; `effective` is what SHOW GLOBAL VARIABLES says."""

    def __init__(self, provider: FakeProvider, effective: dict[str, str] | None = None):
        self.provider = provider
        self.effective = effective or {}

    def setup(self) -> tuple[ServerInfo, Connection]:
        self.provider.calls.append("setup")
        info = self.provider.identity.info(running=True)
        info["version_comment"] = "fake"
        return info, Connection("127.0.0.1", 1, "perfci", "sbtest")

    def effective_config(self) -> dict[str, str]:
        return dict(self.effective)

    def table_states(self, tables: list[str]) -> dict[str, TableState]:
        return {t: TableState(rows=1000, checksum=42) for t in tables}

    def wait_buffer_pool_load(self, timeout_s: float = 300) -> str:
        return "Buffer pool(s) load completed"

    def sizes(self) -> dict[str, TableSize]:
        return {"sbtest1": TableSize(file_size=1 << 20, allocated_size=1 << 20)}

    def cmp_snapshot(self) -> dict[str, int]:
        return {}

    def counters_snapshot(self):
        return {"innodb_metrics": {}, "innodb_cmp": {}, "global_status": {}}

    def gauges(self) -> dict[str, int]:
        return {}

    def quiesce(self, resolved: ResolvedScenario) -> QuiesceOutcome:
        return QuiesceOutcome(timed_out=False)

    def prepare_snapshot_shutdown(self) -> None:
        self.provider.calls.append("shrink redo")

    def running_statements(self) -> str:
        return "(no statement running)"


def fake_handlers(calls: list[str], tps: dict[str, float] | None = None) -> dict:
    """Handlers that record `<kind> <name>`; a measure adds a phase with the given tps."""
    tps = tps or {}

    def record(ctx: StepContext, step: ScenarioStep) -> StepFields:
        calls.append(f"{step.kind} {step.name}")
        return {}

    def measure(ctx: StepContext, step: ScenarioStep) -> StepFields:
        calls.append(f"measure {step.name}")
        value = tps.get(step.name, 100.0)
        metrics = Metrics(duration_s=10.0, events=int(value * 10), transactions=int(value * 10), tps=value,
                          queries=int(value * 100), qps=value * 10, qps_write=value * 8)
        ctx.phases[step.name] = Phase(workload="oltp_write_only", threads=1, time_s=10, command="sysbench fake",
                                      metrics=metrics, intervals=[Interval(
                                          t=1.0, threads=1, tps=value, qps=value * 10, qps_read=0.0,
                                          qps_write=value * 8, qps_other=value * 2, latency_pct=95.0,
                                          latency_ms=1.0, errors_per_s=0.0, reconnects_per_s=0.0)])
        return {"phase": step.name}

    return {"prepare": record, "apply_layout": record, "delete_random": record, "sql": record, "measure": measure}
