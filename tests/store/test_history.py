"""History: append-only summaries, and E-Divisive change points over them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perfci.judge.changes import detect
from perfci.model.history import HistoryRecord
from perfci.store.history_files import append, history_path, read_history

from conftest import run_perfci
from factories import make_result, write_results


def record(i: int, value: float, date: str = "2026-11-01") -> HistoryRecord:
    return HistoryRecord(result_id=f"r{i}", date=date, scenario_hash="sha256:aaaa", metrics={"after.tps": value})


def test_append_is_idempotent_and_keyed_like_baselines(tmp_path):
    results = [make_result(tps=1000) for _ in range(3)]
    [(path, added)] = append(results, tmp_path)
    assert path == history_path(tmp_path, results[0])
    assert path.relative_to(tmp_path).as_posix() == "local/mariadb-10.11/tiny/smoke/default.jsonl"
    assert added == 3 and append(results, tmp_path) == [(path, 0)]
    entries = read_history(path)
    assert [e.result_id for e in entries] == [r.id for r in results]
    assert entries[0].metrics["before.tps"] == 1000 and entries[0].server_version == "10.11.19-MariaDB"
    assert json.loads(path.read_text().splitlines()[0])["schema"] == "perfci.history/4"


def test_lines_written_before_records_had_a_schema_still_load(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"result_id": "r1", "date": "", "harness_sha": "abc", "scenario_hash": "sha256:aaaa",
                                "server_version": "10.11.19", "metrics": {"after.tps": 1.0}}) + "\n")
    [entry] = read_history(path)
    assert entry.result_id == "r1" and entry.schema_ == "perfci.history/4"  # upgraded on load


def test_a_history_path_never_leaves_the_history_dir(tmp_path):
    sneaky = make_result().model_copy(update={"case": "../../../etc/x"})
    path = history_path(tmp_path / "h", sneaky)
    assert path.resolve().is_relative_to((tmp_path / "h").resolve()) and ".." not in path.parts


def test_a_torn_last_line_costs_no_night_it_is_moved_aside_before_the_next_append(tmp_path, capsys):
    first, tonight, tomorrow = make_result(), make_result(), make_result()
    [(path, _)] = append([first], tmp_path)
    with open(path, "a") as f:
        f.write('{"result_id": "x", "met')  # an append cut short: no newline
    assert [r.result_id for r in read_history(path)] == [first.id]
    append([tonight], tmp_path)  # before the fix, tonight glued onto the torn line and was lost
    append([tomorrow], tmp_path)  # ... and every append after it failed
    assert [r.result_id for r in read_history(path)] == [first.id, tonight.id, tomorrow.id]
    assert path.with_name(path.name + ".rejected").read_text() == '{"result_id": "x", "met\n'
    assert f"perfci: warning: {path}:2: damaged line moved to default.jsonl.rejected" in capsys.readouterr().err


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_damaged_middle_line_is_skipped_by_readers_and_moved_aside_by_the_next_append(tmp_path, capsys):
    nights = [make_result() for _ in range(3)]
    [(path, _)] = append(nights[:2], tmp_path)
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\n" + lines[1][:40] + "\n" + lines[1] + "\n")  # a half line in the middle
    assert [r.result_id for r in read_history(path)] == [nights[0].id, nights[1].id]
    assert f"perfci: warning: {path}:2: damaged line skipped" in capsys.readouterr().err
    proc = run_perfci("compare", "--history", str(tmp_path), "--baseline-dir", str(tmp_path),
                      str(write_results(tmp_path / "r", [nights[2]])[0][0]))
    assert proc.returncode in (0, 1) and f"{path}:2: damaged line skipped" in proc.stderr  # reports still run
    append([nights[2]], tmp_path)
    assert capsys.readouterr().err.endswith(f"perfci: warning: {path}:2: damaged line moved to default.jsonl.rejected\n")
    assert [r.result_id for r in read_history(path)] == [r.id for r in nights]
    assert path.with_name(path.name + ".rejected").read_text() == lines[1][:40] + "\n"
    assert capsys.readouterr().err == ""  # read clean after the repair


def test_step_change_is_found_where_it_happened():
    rng = np.random.default_rng(3)
    values = list(rng.normal(1000, 15, 20)) + list(rng.normal(900, 15, 20))  # a 10 % step at run 20
    entries = [record(i, v) for i, v in enumerate(values)]
    found = detect(entries, ["after.tps"])
    [change] = found["after.tps"]
    assert change.index == 20 and change.result_id == "r20"
    assert change.change_pct is not None and -13 < change.change_pct < -7


def test_noise_alone_has_no_change_point():
    rng = np.random.default_rng(4)
    entries = [record(i, v, "") for i, v in enumerate(rng.normal(1000, 15, 40))]
    assert detect(entries, ["after.tps"]) == {}


@pytest.mark.slow
def test_cli_appends_and_reports_changes_with_a_plot(tmp_path):
    results = [make_result(tps=1000 + (i % 3)) for i in range(12)] + [make_result(tps=800 + (i % 3)) for i in range(12)]
    rdir = tmp_path / "r"
    write_results(rdir, results)
    proc = run_perfci("history", "append", str(rdir), "--history", str(tmp_path / "h"))
    assert proc.returncode == 0 and "+24" in proc.stdout
    proc = run_perfci("history", "changes", str(tmp_path / "h"), "--metric", "after.tps",
                      "--plots", str(tmp_path / "plots"))
    assert proc.returncode == 0, proc.stderr
    assert "`after.tps`: -20.0 % at run 12" in proc.stdout
    [png] = (tmp_path / "plots").glob("*.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
