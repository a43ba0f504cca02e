"""`perfci explain DIR`: a kept explain pass judged again (no server, no perf)."""

from __future__ import annotations

from perfci.commands.bisect_cmd import culprit_why
from perfci.judge.bisect import Bisection

from conftest import REPO, run_perfci

KEPT = REPO / "docs" / "findings" / "data" / "2026-11-26-explain"


def test_explain_of_the_kept_trigger_pass_names_the_trigger_path():
    proc = run_perfci("explain", str(KEPT / "trigger"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("### Why: the explain pass (regression in ")
    assert "| `fill_record_n_invoke_before_triggers` → `my_md5` (14 functions) |" in proc.stdout  # the trigger's path
    assert "at least 1.0% of A's CPU" in proc.stdout


def test_explain_of_the_kept_aa_says_nothing_stands_out_and_the_floor_is_the_users():
    proc = run_perfci("explain", str(KEPT / "aa"), "--share-floor", "0.02")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Nothing stands out beyond the noise of the explain bursts.") == 2
    assert "at least 2.0% of A's CPU" in proc.stdout


def test_a_directory_without_an_explain_record_is_bad_input(tmp_path):
    proc = run_perfci("explain", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.strip().endswith("(not an explain pass's directory)"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bisect_summary_ends_with_the_why_of_the_step_that_names_the_first_slower_release():
    found = Bisection(first_bad="mysql-8.0.31", last_good="mysql-8.0.30")
    whys = {("mysql-8.0.15", "mysql-8.0.31"): "the ends' pass", ("mysql-8.0.30", "mysql-8.0.31"): "the culprit's pass"}
    assert culprit_why(found, whys) == ["### Why mysql-8.0.31 is slower than mysql-8.0.30: the culprit's pass", ""]
    assert culprit_why(Bisection(spread_between=("a", "b")), whys) == []  # no single step: no single why
