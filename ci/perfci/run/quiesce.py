"""Bring the server to a quiet, comparable state before a measured phase:
purge finished (history list short) and dirty pages flushed. The redo age (bytes since
the last checkpoint) is recorded before and after, not waited for: it decides when the
server starts flushing on its own during a phase, but MariaDB does not checkpoint an idle
server whose pages are clean (seen: 0.97 MB left as it was), so a wait for it would stall
(docs/findings/2026-11-29-hand-vs-act-nightly.md)."""

from __future__ import annotations

import re
import time

HISTORY_DONE = 1000   # undo log records left: purge is as good as finished
DIRTY_DONE = 64       # dirty pages left in the buffer pool
FLUSH_IO_CAPACITY = 20000
# neither purge nor flushing made progress for this long: waiting longer buys nothing
# (MySQL 8.0.15 kept a few hundred dirty pages at innodb_max_dirty_pages_pct = 0 and
# made a sweep wait the whole 300 s timeout before each write phase)
STALL_S = 10.0


def innodb_status(cur) -> str:
    """SHOW ENGINE INNODB STATUS: the same text in MySQL, Percona Server and MariaDB,
    unlike the metrics tables' columns."""
    cur.execute("SHOW ENGINE INNODB STATUS")
    return str(cur.fetchone()[2])


def history_length(status: str) -> int | None:
    """Undo records waiting for purge."""
    m = re.search(r"History list length (\d+)", status)
    return int(m.group(1)) if m else None


def checkpoint_age(status: str) -> int | None:
    """Redo bytes written since the last checkpoint (Log sequence number − Last checkpoint at)."""
    lsn, checkpoint = (re.search(rf"{label}\s+(\d+)", status) for label in ("Log sequence number", "Last checkpoint at"))
    return int(lsn.group(1)) - int(checkpoint.group(1)) if lsn and checkpoint else None


def dirty_pages(cur) -> int:
    cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
    row = cur.fetchone()
    return int(row[1]) if row else 0


def quiesce(conn, purge: bool, flush_dirty_pages: bool, timeout_s: float) -> dict:
    """Wait (bounded) for purge and flushing; returns what it saw, for the result."""
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    with conn.cursor() as cur:
        status = innodb_status(cur)
        report: dict[str, int | float | bool | None] = {
            "history_length_at_start": history_length(status), "dirty_pages_at_start": dirty_pages(cur),
            "checkpoint_age_at_start": checkpoint_age(status)}
        saved = None
        if flush_dirty_pages:
            cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm, "
                        "@@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max")
            saved = cur.fetchone()
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")  # lwm first: it may not exceed pct
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            # flush at full speed while nothing is measured (the default io_capacity is 200 pages/s)
            cur.execute(f"SET GLOBAL innodb_io_capacity_max = {max(int(saved[3]), FLUSH_IO_CAPACITY)}")
            cur.execute(f"SET GLOBAL innodb_io_capacity = {max(int(saved[2]), FLUSH_IO_CAPACITY)}")
        try:
            best, progressed = (float("inf"), float("inf")), time.monotonic()
            while time.monotonic() < deadline:
                history = history_length(innodb_status(cur)) if purge else None
                dirty = dirty_pages(cur) if flush_dirty_pages else 0
                if (history is None or history <= HISTORY_DONE) and dirty <= DIRTY_DONE:
                    break
                now = (history if history is not None else 0, dirty)
                if now[0] < best[0] or now[1] < best[1]:
                    best, progressed = (min(now[0], best[0]), min(now[1], best[1])), time.monotonic()
                elif time.monotonic() - progressed > STALL_S:
                    break  # stalled: the report's numbers at the end say how far it got
                time.sleep(0.5)
        finally:
            if saved is not None:  # restore in the reverse order of the constraints
                cur.execute(f"SET GLOBAL innodb_io_capacity = {int(saved[2])}")
                cur.execute(f"SET GLOBAL innodb_io_capacity_max = {int(saved[3])}")
                cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(saved[0])}")
                cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct_lwm = {float(saved[1])}")
        status = innodb_status(cur)
        report.update({
            "history_length_at_end": history_length(status),
            "dirty_pages_at_end": dirty_pages(cur),
            "checkpoint_age_at_end": checkpoint_age(status),
            "duration_s": round(time.monotonic() - t0, 3),
            "timed_out": time.monotonic() >= deadline,
        })
    return report
