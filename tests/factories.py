"""Small, valid results built through the model, for fast tests of baselines,
comparisons, history and issues (the end-to-end tests make real ones)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from perfci.model.noise import MetricNoise, NoiseModel
from perfci.model.result import Result
from perfci.store.results import write_result

_ids = itertools.count(1)
HOST = {"runner_class": "local", "hostname": "h", "cpu_model": "Test CPU", "cpus": 2,
        "memory_bytes": 24 << 30, "kernel": "Linux 6", "datadir_filesystem": {"mount": "/", "device": "d", "type": "ext4"}}
MEASURE_PHASES = ("before", "after")


def make_result(tps: float = 1000.0, splits: float = 0.5, status: str = "ok", scenario_hash: str = "sha256:aaaa",
                profile: str = "smoke", runner_class: str = "local", cpus: int = 2, phases=MEASURE_PHASES,
                intervals: int = 10, version: str = "10.11.19", case: str = "default") -> Result:
    n = next(_ids)
    events = int(tps * 30)
    phase_data = {}
    for p in phases if status == "ok" else ():
        phase_data[p] = {
            "workload": "oltp_write_only", "threads": 1, "time_s": 30, "command": "sysbench oltp_write_only run",
            "metrics": {"tps": tps, "qps": tps * 10, "qps_write": tps * 8, "latency_ms_avg": 1000 / tps,
                        "latency_ms_p95": 2000 / tps, "events": events, "transactions": events,
                        "queries": events * 10, "duration_s": 30.0,
                        "index_page_splits_per_txn": splits, "compress_failures_per_txn": 0.2,
                        "uncompress_ops_per_txn": 0.1, "pages_written_per_txn": 1.0},
            "counters": {"innodb_metrics": {"index_page_splits": splits * events, "buffer_flush_batches": events // 10},
                         "global_status": {"Innodb_pages_written": events},
                         "innodb_cmp": {"compress_ops": events, "compress_ops_ok": events // 2}},
            "intervals": [{"t": float(i + 1), "threads": 1, "tps": tps, "qps": tps * 10, "qps_read": 0.0,
                           "qps_write": tps * 8, "qps_other": tps * 2, "latency_pct": 95.0, "latency_ms": 2.0,
                           "errors_per_s": 0.0, "reconnects_per_s": 0.0} for i in range(intervals)],
        }
    flavor = "mysql" if version.startswith("8.") else "mariadb"
    return Result.model_validate({
        "schema": "perfci.result/2", "id": f"tiny-smoke-{n:04d}", "status": status, "case": case,
        "skip_reason": None if status == "ok" else "not supported here",
        "finished_at": f"2026-11-{1 + n % 28:02d}T00:00:00+00:00",
        "harness": {"git_sha": "abc", "sysbench": "sysbench 1.0.20"},
        "host": {**HOST, "runner_class": runner_class, "cpus": cpus},
        "server": {"provider": "local", "flavor": flavor, "version": version, "full_version": f"{version}-MariaDB",
                   "line": f"{flavor}-{'.'.join(version.split('.')[:2])}"},
        "scenario": {"name": "tiny", "profile": profile, "hash": scenario_hash,
                     "resolved": {"steps": [{"kind": "measure", "phase": p} for p in MEASURE_PHASES]}},
        "phases": phase_data,
        "headline": [{"metric": "tps", "numerator": "after", "denominator": "before", "value": 1.0}]
        if status == "ok" and set(MEASURE_PHASES) <= set(phases) else [],
        "reproduce": "perfci run tiny --profile smoke --server local",
    })


def write_results(directory: Path, results: list[Result]) -> list[tuple[Path, Result]]:
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for r in results:
        path = directory / f"{r.id}.json"
        write_result(path, r)
        out.append((path, r))
    return out


def edited(result: Result, **changes: object) -> dict:
    """A result's JSON with top-level fields replaced (for hand-edited or broken files)."""
    data = json.loads(json.dumps(result.dump()))
    data.update(changes)
    return data

# a case's metric whose bursts and instances barely spread (sizes an A/B small)
QUIET_NOISE = MetricNoise(pair_sd=0.004, block_sd=0.003, lag1=0.0, run_cv=0.01, pairs=80, runs=6, pair_seconds=2.0,
                          instance_sd=0.002, instance_df=5)


def make_noise_model(metrics: dict[str, MetricNoise], scenario: str = "tiny", scenario_hash: str = "sha256:aaaa",
                     server_line: str = "mariadb-10.11", burst: int = 1000, runs: int = 6) -> NoiseModel:
    """A noise model of a case's default case at smoke, as `perfci calibrate` saves one,
    learned on `runs` A/As of the scenario at `scenario_hash`."""
    return NoiseModel(runner_class="local", server_line=server_line, scenario=scenario, profile="smoke",
                      case="default", scenario_hash=scenario_hash, created_at="2026-11-20T00:00:00Z", host="vm",
                      runs=[f"aa{i}" for i in range(runs)], burst_transactions={"before": burst, "after": burst},
                      metrics=metrics)
