"""perfci's own speed on the work a nightly job does after the servers: parsing
sysbench output, judging 100 cases against 50-sample baselines, loading a year of
history. Targets are generous ceilings on a 2-core runner; the saved runs
(--benchmark-autosave) show drift long before a ceiling is hit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfci.judge.changes import detect
from perfci.judge.compare import compare_cases
from perfci.model.history import HistoryRecord
from perfci.run.sysbench import parse_report
from perfci.store.baseline_files import update_baselines
from perfci.store.case_inputs import load_cases
from perfci.store.history_files import read_history

from factories import make_result, write_results

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def test_parse_sysbench_report(benchmark):
    text = (DATA / "sysbench-1.0.20-oltp_write_only.txt").read_text()
    report = benchmark(parse_report, text)
    assert report.metrics["tps"] > 0
    assert benchmark.stats.stats.median < 0.005  # 5 ms per report


@pytest.fixture(scope="module")
def hundred_cases(tmp_path_factory):
    """100 cases (one current run each) and their 50-sample baselines."""
    root = tmp_path_factory.mktemp("baselines")
    work = tmp_path_factory.mktemp("results")
    current = []
    for case in range(100):
        samples = [make_result(tps=1000 + (i % 7) * 5, case=f"c{case}", intervals=60) for i in range(50)]
        update_baselines(write_results(work / f"c{case}", samples), root=root, window=50)
        current.append(make_result(tps=960, case=f"c{case}", intervals=60))
    return current, root


def test_compare_100_cases_against_50_sample_baselines(benchmark, hundred_cases):
    current, root = hundred_cases
    comparisons = benchmark.pedantic(lambda: compare_cases(load_cases(current, baseline_root=root)), rounds=5, iterations=1)
    assert len(comparisons) == 100 and all(len(c.baseline.samples) == 50 for c in comparisons if c.baseline)
    assert benchmark.stats.stats.median < 5.0


@pytest.fixture(scope="module")
def year_of_history(tmp_path_factory):
    """365 nightly records of one case, ~40 metrics each, with a step at day 200."""
    path = tmp_path_factory.mktemp("history") / "default.jsonl"
    lines = []
    for day in range(365):
        level = 1000.0 if day < 200 else 900.0
        metrics = {f"{phase}.{name}": level * (1 + ((day * 7 + i) % 11 - 5) / 500)
                   for phase in ("before", "after") for i, name in enumerate(
                       ["tps", "qps", "qps_write", "latency_ms_avg", "latency_ms_p95", "pages_written_per_txn",
                        "index_page_splits_per_txn", "compress_failures_per_txn", "uncompress_ops_per_txn",
                        "log_fsyncs_per_txn", "server_cpu_util", "errors_per_s", "qps_read", "qps_other",
                        "latency_ms_max", "latency_ms_min", "buffer_pool_reads_per_txn", "data_written_bytes_per_txn",
                        "compress_ops_per_txn", "compress_miss_rate"])}
        record = HistoryRecord(result_id=f"r{day}", date=f"day {day}", scenario_hash="sha256:aaaa", metrics=metrics)
        lines.append(json.dumps(record.model_dump(mode="json", by_alias=True)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_load_a_year_of_history(benchmark, year_of_history):
    entries = benchmark(read_history, year_of_history)
    assert len(entries) == 365
    assert benchmark.stats.stats.median < 1.0


def test_change_points_over_a_year_of_one_metric(benchmark, year_of_history):
    entries = read_history(year_of_history)
    found = benchmark.pedantic(detect, args=(entries, ["after.tps"]), rounds=3, iterations=1)
    assert [c.index for c in found["after.tps"]] == [200]
    assert benchmark.stats.stats.median < 30.0
