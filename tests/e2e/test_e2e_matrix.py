"""The three matrix scenarios at the smoke profile on the real local MariaDB: one
result per case, the robust effects of their seeds, the matrix report and plots. They
read the shared smoke series (tests/conftest.py), which scripts/check runs beside the
other end-to-end tests that assert behaviour: behaviour only, never speed (per-case skips: test_e2e_skips.py)."""

from __future__ import annotations

import re

import pytest


def _series(smoke_series, scenario: str) -> dict:
    run = smoke_series[("mariadb-10.11", scenario)]
    assert run["code"] == 0, run["stderr"]
    return run


@pytest.fixture(scope="module")
def change_buffer(smoke_series):
    return _series(smoke_series, "change-buffer-matrix")


@pytest.fixture(scope="module")
def row_formats(smoke_series):
    return _series(smoke_series, "row-format-compression")


@pytest.fixture(scope="module")
def read_only_scaling(smoke_series):
    return _series(smoke_series, "compressed-read-only-scaling")


def _merges(result: dict) -> float:
    m = result["phases"]["write"]["metrics"]
    return m["ibuf_merges_insert_per_s"] + m["ibuf_merges_delete_mark_per_s"] + m["ibuf_merges_delete_per_s"]


def test_change_buffer_matrix_has_one_result_per_case_and_merges_only_when_buffering(change_buffer):
    results = change_buffer["results"]
    assert sorted(results) == ["cx_full/change_buffering=all", "cx_full/change_buffering=none",
                               "x_full/change_buffering=all", "x_full/change_buffering=none"]
    for layout in ("cx_full", "x_full"):
        buffered, unbuffered = results[f"{layout}/change_buffering=all"], results[f"{layout}/change_buffering=none"]
        assert buffered["status"] == unbuffered["status"] == "ok"
        assert buffered["server"]["effective_config"]["innodb_change_buffering"] == "all"
        # data (2 x 40k rows with 4 secondary indexes) far exceeds the 16M buffer pool
        assert _merges(buffered) > 10, buffered["phases"]["write"]["counters"]["innodb_metrics"]
        assert _merges(unbuffered) < _merges(buffered) / 10
        assert buffered["phases"]["write"]["metrics"]["tps"] > 0 and unbuffered["phases"]["write"]["metrics"]["tps"] > 0


def test_change_buffer_cases_of_a_layout_share_one_snapshot_with_equal_tables(change_buffer):
    results = change_buffer["results"]
    for layout in ("cx_full", "x_full"):
        fresh, restored = (results[f"{layout}/change_buffering={m}"]["dataset"] for m in ("all", "none"))
        assert fresh["snapshot"]["restored"] is False and restored["snapshot"]["restored"] is True
        assert fresh["snapshot"]["key"] == restored["snapshot"]["key"]
        assert restored["tables"] == fresh["tables"] and fresh["tables"]["sbtest1"]["rows"] == 40000


def test_matrix_report_links_plots_that_exist(change_buffer):
    out = change_buffer["out"]
    report = (out / "change-buffer-matrix-smoke-matrix.md").read_text()
    for case in change_buffer["results"]:
        assert f"`{case}`" in report
    images = re.findall(r"!\[[^\]]*\]\((plots/[^)]+\.png)\)", report)
    assert len(images) == 3 and all((out / img).stat().st_size > 1000 for img in images)


def test_row_formats_compress_and_record_payload_and_times(row_formats):
    results = row_formats["results"]
    assert len(results) == 6
    for payload in ("random", "text"):
        size = {}
        for fmt in ("dynamic", "compressed_8", "compressed_4"):
            r = results[f"{fmt}/{payload}"]
            steps = {s["name"]: s for s in r["steps"]}
            assert steps["load"]["payload"] == {"random": "sysbench", "text": "text"}[payload]
            assert steps["load"]["duration_s"] > 0 and steps["create-index-k"]["duration_s"] > 0
            assert steps["convert"]["statements"][0]["sql"].startswith("ALTER TABLE sbtest1 ROW_FORMAT=")
            assert set(r["phases"]) == {"oltp-rw-t1", "oltp-rw-t4"}
            size[fmt] = steps["load"]["sizes_after"]["sbtest1"]["file_size"]
        assert size["compressed_8"] < size["dynamic"] and size["compressed_4"] < size["dynamic"], size
        miss = results[f"compressed_4/{payload}"]["phases"]["oltp-rw-t4"]["metrics"]["compress_miss_rate"]
        assert miss is not None and 0 <= miss <= 1


def test_read_only_scaling_records_server_cpu_per_thread_count(read_only_scaling):
    results = read_only_scaling["results"]
    assert sorted(results) == ["compressed_8", "uncompressed"]
    for r in results.values():
        assert [p for p in r["phases"] if p.startswith("ro-")] == ["ro-t1", "ro-t2", "ro-t4"]
        for phase in r["phases"].values():
            assert phase["metrics"]["tps"] > 0 and phase["metrics"]["server_cpu_util"] > 0
