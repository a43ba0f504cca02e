"""Counters read around every measured phase, stored as deltas, and the
per-transaction metrics derived from them (far less noisy than throughput)."""

from __future__ import annotations

import re
from typing import TypedDict

from perfci.host.hostcpu import process_cpu_seconds
from perfci.model.flavor import ServerIdentity, Version


class Snapshot(TypedDict, total=False):
    """Counter values at one moment (a phase's counters are after - before)."""

    innodb_metrics: dict[str, int]
    innodb_cmp: dict[str, int]
    global_status: dict[str, int | float]
    server_cpu_seconds: float

# Always present in a phase's deltas (0 when unchanged), so consumers can rely on them.
KEY_INNODB_METRICS = (
    "index_page_splits", "index_page_merge_attempts", "index_page_merge_successful",
    "index_page_reorg_attempts", "index_page_reorg_successful", "index_page_discards",
)
# SHOW GLOBAL STATUS values that are levels, not counters: their deltas explain nothing.
GAUGE_STATUS = re.compile(
    r"^(Innodb_buffer_pool_(pages|bytes)_(data|dirty|free|misc|total|old|latched|made_young_rate)"
    r"|Innodb_buffer_pool_(resize|load|dump)_status.*|Innodb_page_size|Innodb_history_list_length"
    r"|Innodb_mem_.*|Innodb_num_open_files|Innodb_.*pending.*|Innodb_checkpoint_.*|Innodb_lsn_.*"
    r"|Innodb_max_trx_id|Innodb_current_row_locks|Innodb_row_lock_current_waits|Innodb_ibuf_(size|free_list|segment_size)"
    r"|Innodb_available_undo_logs|Innodb_background_log_sync|Open_.*|Threads_.*|Uptime.*|Max_used_.*|Memory_used.*"
    r"|Last_query_cost|Qcache_(free_.*|queries_in_cache|total_blocks)|Tc_log_.*|Slave_open_temp_tables)$"
)
IBUF_MERGES = ("ibuf_merges", "ibuf_merges_insert", "ibuf_merges_delete_mark", "ibuf_merges_delete")
CMP_COLUMNS = ("compress_ops", "compress_ops_ok", "compress_time", "uncompress_ops", "uncompress_time")


def _rows(conn, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def _number(value) -> float | int | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else f


def cmp_snapshot(conn) -> dict:
    """INNODB_CMP counters as {"<page_size>.<column>": value}."""
    snap = {}
    for row in _rows(conn, "SELECT page_size, " + ", ".join(CMP_COLUMNS) + " FROM information_schema.INNODB_CMP"):
        page_size, values = row[0], row[1:]
        for col, value in zip(CMP_COLUMNS, values):
            snap[f"{page_size}.{col}"] = int(value)
    return snap


def cmp_delta(before: dict, after: dict) -> dict:
    """Summed over page sizes: {column: after - before}."""
    per_size = {k: v - before.get(k, 0) for k, v in after.items()}
    return {col: sum(v for k, v in per_size.items() if k.endswith("." + col)) for col in CMP_COLUMNS}


def miss_rate(cmp_: dict) -> float | None:
    """Compression misses (a page that did not fit KEY_BLOCK_SIZE: split and recompress)
    per compression attempt."""
    ops = cmp_.get("compress_ops") or 0
    return round((ops - cmp_.get("compress_ops_ok", 0)) / ops, 6) if ops else None


def gauges(conn) -> dict:
    """INNODB_METRICS levels (TYPE 'value', e.g. ibuf_size) at one moment."""
    return {name: int(count) for name, count in _rows(
        conn, "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE TYPE = 'value'")}


def snapshot(conn, pid: int | None = None) -> Snapshot:
    snap: Snapshot = {
        # TYPE 'value' metrics are levels (gauges); only counters make meaningful deltas
        "innodb_metrics": {name: int(count) for name, count in _rows(
            conn, "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE TYPE <> 'value'")},
        "innodb_cmp": cmp_snapshot(conn),
        "global_status": {},
    }
    for name, value in _rows(conn, "SHOW GLOBAL STATUS"):
        number = _number(value)
        if number is not None and not GAUGE_STATUS.match(name):
            snap["global_status"][name] = number
    if pid is not None:
        cpu = process_cpu_seconds(pid)
        if cpu is not None:
            snap["server_cpu_seconds"] = cpu
    return snap


def delta(before: Snapshot, after: Snapshot) -> dict:
    """after - before per counter group; keeps non-zero changes and the key counters."""
    out: dict = {}
    for group in ("innodb_metrics", "global_status"):
        a: dict[str, int | float] = dict(after.get(group) or {})  # type: ignore[call-overload]
        b: dict[str, int | float] = dict(before.get(group) or {})  # type: ignore[call-overload]
        changes = {k: round(v - b.get(k, 0), 6) for k, v in a.items() if v != b.get(k, 0)}
        if group == "innodb_metrics":
            for k in KEY_INNODB_METRICS:
                if k in a:
                    changes.setdefault(k, 0)
        out[group] = dict(sorted(changes.items()))
    cmp_after, cmp_before = after.get("innodb_cmp", {}), before.get("innodb_cmp", {})
    out["innodb_cmp"] = cmp_delta(cmp_before, cmp_after)
    out["innodb_cmp_per_page_size"] = {k: v - cmp_before.get(k, 0) for k, v in cmp_after.items()
                                       if v != cmp_before.get(k, 0)}
    if "server_cpu_seconds" in after and "server_cpu_seconds" in before:
        out["server_cpu_seconds"] = round(after["server_cpu_seconds"] - before["server_cpu_seconds"], 3)
    return out


def derived(counters: dict, sysbench_metrics: dict) -> dict:
    """Per-transaction work counters; a transaction is one sysbench event."""
    events = sysbench_metrics.get("events") or 0
    im, cmp_, gs = counters["innodb_metrics"], counters["innodb_cmp"], counters["global_status"]

    def per_txn(value) -> float | None:
        return round(value / events, 6) if events else None

    out = {f"{name}_per_txn": per_txn(im.get(name, 0)) for name in KEY_INNODB_METRICS}
    failures = cmp_["compress_ops"] - cmp_["compress_ops_ok"]
    out.update({
        "compress_ops_per_txn": per_txn(cmp_["compress_ops"]),
        "compress_failures_per_txn": per_txn(failures),
        "uncompress_ops_per_txn": per_txn(cmp_["uncompress_ops"]),
        "compress_miss_rate": miss_rate(cmp_),
        "pages_written_per_txn": per_txn(gs.get("Innodb_pages_written", 0)),
        # the durability cost of a transaction (flush_log_at_trx_commit, group commit):
        # MariaDB counts every fsync in Innodb_data_fsyncs, MySQL the redo log's apart
        "fsyncs_per_txn": per_txn(gs.get("Innodb_data_fsyncs", 0) + gs.get("Innodb_os_log_fsyncs", 0)),
        "data_written_bytes_per_txn": per_txn(gs.get("Innodb_data_written", 0)),
        "buffer_pool_reads_per_txn": per_txn(gs.get("Innodb_buffer_pool_reads", 0)),
        "buffer_pool_read_requests_per_txn": per_txn(gs.get("Innodb_buffer_pool_read_requests", 0)),
    })
    cpu = counters.get("server_cpu_seconds")
    duration = sysbench_metrics.get("duration_s")
    if duration:  # change-buffer merges per second (seed 004's merge rates)
        for name in IBUF_MERGES:
            out[f"{name}_per_s"] = round(im.get(name, 0) / duration, 3)
    if cpu is not None and duration:
        out["server_cpu_util"] = round(cpu / duration, 4)  # 1.0 = one core busy
    return out


def tablespaces_table(identity: ServerIdentity) -> str | None:
    """MySQL 8.0's data dictionary renamed INNODB_SYS_TABLESPACES (MariaDB and MySQL 5.7
    keep it); before MariaDB 10.2 / MySQL 5.7 it has no FILE_SIZE (None: no sizes)."""
    if identity.version < (Version(10, 2, 0) if identity.flavor == "mariadb" else Version(5, 7, 0)):
        return None
    old_name = identity.flavor == "mariadb" or identity.version < Version(8, 0, 0)
    return "INNODB_SYS_TABLESPACES" if old_name else "INNODB_TABLESPACES"


def tablespace_sizes(conn, identity: ServerIdentity, database: str) -> dict:
    """File and allocated size of each table's .ibd, from the server's own view
    (works for every provider, not only where we can see the datadir); none where the
    server's view does not say (MariaDB 10.1)."""
    table = tablespaces_table(identity)
    if table is None:
        return {}
    rows = _rows(conn, f"SELECT NAME, FILE_SIZE, ALLOCATED_SIZE FROM information_schema.{table} "
                       f"WHERE NAME LIKE '{database}/%'")
    return {name.split("/", 1)[1]: {"file_size": int(fs), "allocated_size": int(al)} for name, fs, al in rows}
