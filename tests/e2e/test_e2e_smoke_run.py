"""End to end on real components: perfci starts a throwaway MariaDB on a free loopback
port, runs real sysbench (rebuild-after-delete's smoke profile, its dataset prepared, not
restored) and writes the result file. Not `alone`: it asserts what the run recorded and
printed, never speed, so it runs beside the other end-to-end modules (--allow-busy, which
the result records)."""

from __future__ import annotations

import os

import pytest

from conftest import server_processes

pytestmark = pytest.mark.e2e


def test_smoke_result_has_both_phases_with_throughput_and_intervals(smoke_result):
    res = smoke_result["result"]
    # --json: the result file and its run-level metrics, for a script
    [entry] = smoke_result["json"]["results"]
    assert smoke_result["json"]["schema"] == "perfci.run/1" and entry["path"] == str(smoke_result["path"])
    assert entry["id"] == res["id"]
    # valid; beside the other end-to-end modules (scripts/check: --allow-busy) the host's
    # load may be its only reason not to be
    reasons = res["validity"]["reasons"]
    assert entry["valid"] is (not reasons) and (entry["valid"] or os.environ.get("PERFCI_ALLOW_BUSY")), reasons
    assert all("host busy" in reason for reason in reasons), reasons
    assert entry["metrics"]["before.tps"] == res["phases"]["before"]["metrics"]["tps"]
    assert res["schema"] == "perfci.result/2" and res["status"] == "ok"
    assert list(res["phases"]) == ["before", "after"]
    for name, phase in res["phases"].items():
        assert phase["metrics"]["qps"] > 0 and phase["metrics"]["qps_write"] > 0, name
        assert len(phase["intervals"]) >= 5, name
        assert phase["sysbench_version"]
        assert "--skip_trx=on" in phase["command"] and "--index_updates=5" in phase["command"]
        # fixed work: exactly the seeded 3000 transactions, the 300 s cap a guard
        assert phase["metrics"]["events"] == phase["transactions_target"] == 3000, name
        assert (phase["bound"], phase["rand_seed"], phase["time_s"]) == ("transactions", 1, 300), name
        assert "--events=3000" in phase["command"] and "--rand-seed=1" in phase["command"]
        # the tail from sysbench's histogram: 3000 transactions give p99, too few for p99.9
        assert "--histogram=on" in phase["command"]
        assert phase["metrics"]["latency_ms_p99"] >= phase["metrics"]["latency_ms_p95"] > 0, name
        assert phase["metrics"].get("latency_ms_p99_9") is None, name
        assert set(phase["host_cpu"]) == {"host", "server", "client", "perfci", "kernel", "others"}
    assert set(res["validity"]) == {"valid", "reasons"}


def test_smoke_rebuild_shrinks_the_ibd_and_counters_move(smoke_result):
    res = smoke_result["result"]
    sizes = {s["name"]: s["sizes_after"]["sbtest1"]["file_size"] for s in res["steps"]}
    assert sizes["rebuild"] < sizes["delete-half"]
    deleted = next(s for s in res["steps"] if s["name"] == "delete-half")
    assert 0.4 < deleted["rows_deleted"] / 200_000 < 0.6
    for phase in res["phases"].values():
        assert phase["counters"]["innodb_metrics"]["index_page_splits"] > 0
        assert phase["counters"]["innodb_cmp"]["compress_ops"] > 0
        assert phase["metrics"]["index_page_splits_per_txn"] > 0
    assert {(h["metric"], h["numerator"], h["denominator"]) for h in res["headline"]} >= {("qps_write", "after", "before")}
    assert next(h for h in res["headline"] if h["metric"] == "qps_write")["value"] > 0
    ddl = next(s for s in res["steps"] if s["name"] == "rebuild")
    assert ddl["statements"][0]["sql"] == "ALTER TABLE sbtest1 ENGINE=InnoDB" and ddl["duration_s"] > 0


def test_smoke_records_context_and_effective_config(smoke_result):
    res = smoke_result["result"]
    srv = res["server"]
    assert srv["flavor"] == "mariadb" and srv["version"].startswith("10.")
    eff = srv["effective_config"]
    assert eff["innodb_buffer_pool_size"] == str(512 << 20)      # the smoke profile's value
    assert eff["innodb_log_file_size"] == str(512 << 20)         # mapped from innodb_redo_log_capacity
    assert eff["innodb_flush_log_at_trx_commit"] == "0" and eff["innodb_adaptive_hash_index"] == "OFF"
    skipped = {n["option"] for n in res["notes"] if n["action"] == "skipped"}
    assert {"innodb_use_fdatasync", "default_authentication_plugin"} <= skipped
    assert res["scenario"]["hash"].startswith("sha256:") and res["scenario"]["profile"] == "smoke"
    assert res["scenario"]["resolved"]["dataset"]["rows"] == 200_000
    host = res["host"]
    assert host["cpus"] >= 1 and host["memory_bytes"] > 0 and host["cpu_model"] and host["kernel"]
    assert host["datadir_filesystem"]["type"] != "unknown"
    assert res["harness"]["git_sha"] and "sysbench" in res["harness"]["sysbench"]
    assert res["reproduce"] == "perfci run rebuild-after-delete --profile smoke --server local"


def test_smoke_prints_summary_and_cleans_up(smoke_result):
    out = smoke_result["proc"].stdout
    assert "| metric | before | after | after/before |" in out and "| qps write |" in out
    assert "Headline:** qps_write after/before" in out
    assert smoke_result["path"].with_suffix(".md").read_text().startswith("### rebuild-after-delete")
    assert "measure before" in smoke_result["proc"].stderr  # progress with step names
    assert list(smoke_result["workdir"].iterdir()) == []   # datadir removed
    assert server_processes(str(smoke_result["workdir"])) == []
