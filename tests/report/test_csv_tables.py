"""CSV export: the history (one row per night and metric) and a comparison (one row per
case and metric), read back with the csv module as a spreadsheet would."""

from __future__ import annotations

import csv
import io

import pytest

from perfci.report.csv_tables import COMPARISON_COLUMNS, HISTORY_COLUMNS
from perfci.store.history_files import append, exclude

from conftest import run_perfci
from factories import make_result, write_results


def read(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.slow  # several CLI starts
def test_history_export_has_a_row_per_night_and_metric(tmp_path):
    results = [make_result(tps=1000 + i) for i in range(3)]
    append(results, tmp_path / "h")
    exclude(tmp_path / "h", results[1].id, "a noisy neighbour")
    proc = run_perfci("history", "export", "--history", str(tmp_path / "h"))
    assert proc.returncode == 0, proc.stderr
    rows = read(proc.stdout)
    assert list(rows[0]) == HISTORY_COLUMNS
    tps = [r for r in rows if r["metric"] == "before.tps"]
    assert [float(r["value"]) for r in tps] == [1000, 1001, 1002]
    assert [r["excluded"] for r in tps] == ["False", "True", "False"]
    assert tps[0]["case"] == "local/mariadb-10.11/tiny/smoke/default" and tps[0]["server_version"] == "10.11.19-MariaDB"
    out = tmp_path / "h.csv"
    assert run_perfci("history", "export", "--history", str(tmp_path / "h"), "--out", str(out)).returncode == 0
    assert out.read_text() == proc.stdout
    none = run_perfci("history", "export", "--history", str(tmp_path / "h"), "--case", "other/*")
    assert none.returncode == 2 and "no history file matches" in none.stderr


@pytest.mark.slow  # several CLI starts
def test_compare_and_diff_write_one_row_per_case_and_metric(tmp_path):
    a = tmp_path / "a"
    write_results(a, [make_result(tps=1000 + 5 * i) for i in range(4)])
    write_results(tmp_path / "b", [make_result(tps=800 + 5 * i) for i in range(4)])
    proc = run_perfci("diff", str(a), str(tmp_path / "b"), "--csv", str(tmp_path / "d.csv"))
    assert proc.returncode == 1, proc.stderr
    rows = read((tmp_path / "d.csv").read_text())
    assert list(rows[0]) == COMPARISON_COLUMNS
    tps = next(r for r in rows if r["metric"] == "before.tps")
    assert tps["verdict"] == "regression" and tps["baseline_samples"] == "4"
    assert abs(float(tps["change_pct"]) + 20) < 1 and float(tps["ratio_low"]) < float(tps["ratio"]) < float(tps["ratio_high"])
    assert float(tps["baseline_mean"]) == 1007.5 and float(tps["current_mean"]) == 807.5
