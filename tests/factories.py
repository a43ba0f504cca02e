"""Small, valid result dicts for fast tests of baselines and comparisons
(the end-to-end tests make real ones)."""

from __future__ import annotations

import itertools

_ids = itertools.count(1)
HOST = {"runner_class": "local", "hostname": "h", "cpu_model": "Test CPU", "cpus": 2,
        "memory_bytes": 24 << 30, "kernel": "Linux 6", "datadir_filesystem": {"type": "ext4"}}


def make_result(tps: float = 1000.0, splits: float = 0.5, status: str = "ok", scenario_hash: str = "sha256:aaaa",
                profile: str = "smoke", runner_class: str = "local", cpus: int = 2, phases=("before", "after"),
                intervals: int = 10) -> dict:
    n = next(_ids)
    events = int(tps * 30)
    phase_data = {}
    for p in phases:
        phase_data[p] = {
            "metrics": {"tps": tps, "qps": tps * 10, "qps_write": tps * 8, "latency_ms_avg": 1000 / tps,
                        "latency_ms_p95": 2000 / tps, "events": events, "duration_s": 30.0,
                        "index_page_splits_per_txn": splits, "compress_failures_per_txn": 0.2,
                        "uncompress_ops_per_txn": 0.1, "pages_written_per_txn": 1.0},
            "counters": {"innodb_metrics": {"index_page_splits": splits * events, "buffer_flush_batches": events // 10},
                         "global_status": {"Innodb_pages_written": events},
                         "innodb_cmp": {"compress_ops": events, "compress_ops_ok": events // 2}},
            "intervals": [{"t": float(i + 1), "tps": tps} for i in range(intervals)],
            "sizes_after": {},
        }
    return {
        "schema": "perfci.result/1", "id": f"tiny-smoke-{n:04d}", "status": status, "case": "default",
        "finished_at": f"2026-11-{1 + n % 28:02d}T00:00:00+00:00",
        "harness": {"git_sha": "abc", "sysbench": "sysbench 1.0.20"},
        "host": {**HOST, "runner_class": runner_class, "cpus": cpus},
        "server": {"flavor": "mariadb", "version": "10.11.19", "full_version": "10.11.19-MariaDB"},
        "scenario": {"name": "tiny", "profile": profile, "hash": scenario_hash,
                     "resolved": {"steps": [{"kind": "measure", "phase": p} for p in ("before", "after")]}},
        "phases": phase_data,
        "headline": {"tps after/before": 1.0},
        "reproduce": "perfci run tiny --profile smoke --server local",
    }
