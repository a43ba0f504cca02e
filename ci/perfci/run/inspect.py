"""What the runner reads from a running server, in one place: identity, settings,
table states, sizes and counters. `SqlInspector` asks the server over SQL; the
runner's unit tests pass their own inspector so that no server is needed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from perfci.model.connection import Connection
from perfci.model.flavor import ServerInfo, identify
from perfci.model.result import Counters, QuiesceOutcome, TableSize, TableState
from perfci.model.scenario import ResolvedScenario
from perfci.providers.provider import ServerProvider
from perfci.run import collectors
from perfci.run.quiesce import quiesce
from perfci.run.snapshots import shrink_redo

DATABASE = "sbtest"


def buffer_pool_load_over(status: str) -> bool:
    """Innodb_buffer_pool_load_status says there is nothing (more) to wait for: done,
    never started ("not started"; MariaDB 10.1, which loads nothing at startup: "not
    yet started"), aborted or failed."""
    low = status.lower()
    return (not status or "completed" in low or "not started" in low or "not yet started" in low
            or "abort" in low or "cannot" in low)


class RunningServer(Protocol):
    """Reads the runner makes around steps and phases."""

    def setup(self) -> tuple[ServerInfo, Connection]:
        """Server identity fields (flavor, version, ...) and the benchmark account."""

    def effective_config(self) -> dict[str, str]: ...
    def table_states(self, tables: list[str]) -> dict[str, TableState]: ...
    def wait_buffer_pool_load(self, timeout_s: float = 300) -> str: ...
    def sizes(self) -> dict[str, TableSize]: ...
    def cmp_snapshot(self) -> dict[str, int]: ...
    def counters_snapshot(self) -> collectors.Snapshot: ...
    def gauges(self) -> dict[str, int]: ...
    def quiesce(self, resolved: ResolvedScenario) -> QuiesceOutcome: ...
    def prepare_snapshot_shutdown(self) -> None: ...
    def running_statements(self) -> str: ...


class SqlInspector:
    """The real reads, over the provider's administrative connection."""

    def __init__(self, server: ServerProvider):
        self.server = server

    def setup(self) -> tuple[ServerInfo, Connection]:
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT VERSION(), @@version_comment")
            row = cur.fetchone()
            assert row is not None
            version, comment = row
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
            bench = self.server.bench_connection(cur, DATABASE)
        return identify(version, comment).info(running=True), bench

    def effective_config(self) -> dict[str, str]:
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SHOW GLOBAL VARIABLES")
            return {str(name): str(value) for name, value in cur.fetchall()}

    def table_states(self, tables: list[str]) -> dict[str, TableState]:
        """Row count and CHECKSUM TABLE of every table: the identity of a dataset."""
        out = {}
        with self.server.connect(DATABASE) as conn, conn.cursor() as cur:
            for table in tables:
                cur.execute(f"SELECT COUNT(*) FROM {table}")
                count = cur.fetchone()
                cur.execute(f"CHECKSUM TABLE {table}")
                checksum = cur.fetchone()
                assert count is not None and checksum is not None
                out[table] = TableState(rows=int(count[0]), checksum=checksum[1])
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
                status = str(row[1]) if row else ""
                if buffer_pool_load_over(status):
                    break
                time.sleep(0.5)
        return status

    def sizes(self) -> dict[str, TableSize]:
        with self.server.connect() as conn:
            raw = collectors.tablespace_sizes(conn, self.server.identity, DATABASE)
        return {name: TableSize(**size) for name, size in raw.items()}

    def cmp_snapshot(self) -> dict[str, int]:
        with self.server.connect() as conn:
            return collectors.cmp_snapshot(conn)

    def counters_snapshot(self) -> collectors.Snapshot:
        with self.server.connect() as conn:
            return collectors.snapshot(conn, self.server.pid)

    def gauges(self) -> dict[str, int]:
        with self.server.connect() as conn:
            return collectors.gauges(conn)

    def quiesce(self, resolved: ResolvedScenario) -> QuiesceOutcome:
        q = resolved.quiesce
        with self.server.connect() as conn:
            return QuiesceOutcome(**quiesce(conn, q.purge, q.flush_dirty_pages, q.timeout_s))

    def prepare_snapshot_shutdown(self) -> None:
        with self.server.connect() as conn:
            shrink_redo(conn, self.server.identity)

    def running_statements(self) -> str:
        """What a hung server is doing: its statements that have run longest (a new
        connection answers as long as the server's connection threads do)."""
        with self.server.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT ID, USER, TIME, STATE, LEFT(INFO, 200) FROM information_schema.PROCESSLIST "
                        "WHERE COMMAND <> 'Sleep' AND INFO IS NOT NULL AND ID <> CONNECTION_ID() "
                        "ORDER BY TIME DESC LIMIT 10")
            rows = cur.fetchall()
        return "\n".join(f"- id {i} ({user}) {t} s, {state or 'no state'}: {info}" for i, user, t, state, info in rows) \
            or "(no statement running)"


def cmp_counters(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return collectors.cmp_delta(before, after)


def counters_delta(before: collectors.Snapshot, after: collectors.Snapshot) -> Counters:
    return Counters(**collectors.delta(before, after))


def logs_dir(server: ServerProvider) -> Path:
    path = server.workdir / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path
