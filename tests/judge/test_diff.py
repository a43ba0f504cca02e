"""`perfci diff A B`: B's results judged against A's, paired by case, with what a diff
cannot see said; the command on real result files."""

from __future__ import annotations

import json

import pytest

from perfci.judge.compare import Rules
from perfci.judge.diff import ab_instead, blind_spot, blind_spot_lines, diff_cases, pair_results
from perfci.model.result import Rerun
from perfci.model.verdicts import Outcome
from perfci.util.errors import BadInput

from conftest import run_perfci
from factories import make_result, write_results


def runs(tps: float, n: int, **kw) -> list:
    return [make_result(tps=tps * (1 + 0.004 * (i - n / 2)), **kw) for i in range(n)]


def test_b_slower_than_a_is_a_regression_with_its_blind_spot():
    pairing = pair_results(runs(1000, 5), runs(800, 5))
    [comp] = diff_cases(pairing, Rules(), "a/")
    verdicts = {r.key: r.verdict.verdict for r in comp.rows}
    assert verdicts["before.tps"] == Outcome.REGRESSION and verdicts["after.tps"] == Outcome.REGRESSION
    spot = blind_spot(comp)
    assert (spot.runs_a, spot.runs_b) == (5, 5)
    key, size = spot.widest
    assert size is not None and 0.0 < size < 0.2  # five runs a side measure a spread: a change can be called
    assert "not interleaved" in blind_spot_lines(spot)[0]


def test_one_run_a_side_can_call_nothing_and_says_so():
    [comp] = diff_cases(pair_results(runs(1000, 1), runs(700, 1)), Rules(), "a.json")
    assert not comp.regressions  # no spread measured: at most inconclusive
    lines = blind_spot_lines(blind_spot(comp))
    assert any("no change can be called" in line for line in lines)


def test_pairs_by_case_and_names_what_is_on_one_side_only():
    a = runs(1000, 2) + [make_result(case="big")]
    b = runs(1000, 2) + [make_result(profile="nightly")]
    pairing = pair_results(a, b)
    assert [p.key for p in pairing.pairs] == [("tiny", "smoke", "default")]
    assert pairing.only_a == [("tiny", "smoke", "big")] and pairing.only_b == [("tiny", "nightly", "default")]
    with pytest.raises(BadInput, match="no case .* is on both sides"):
        pair_results(runs(1000, 1), [make_result(profile="nightly")])


def test_the_ab_that_decides_is_built_from_the_typed_runs():
    a = [r.model_copy(update={"rerun": Rerun(scenario="tiny", profile="smoke", server="mariadb-10.11")})
         for r in runs(1000, 2)]
    b = [r.model_copy(update={"rerun": Rerun(scenario="tiny", profile="smoke", server="mariadb-11.4",
                                             config=["innodb_flush_log_at_trx_commit=2"])}) for r in runs(990, 2)]
    [pair] = pair_results(a, b).pairs
    assert ab_instead(pair) == ("perfci ab tiny --profile smoke --a mariadb-10.11 --b mariadb-11.4 "
                                "--b-config innodb_flush_log_at_trx_commit=2")
    assert ab_instead(pair_results(runs(1000, 1), b).pairs[0]) is None  # A's run does not say how it ran


@pytest.mark.slow  # several CLI starts
def test_the_command_reports_exits_1_and_writes_the_comparison_json(tmp_path):
    a = [p for p, _ in write_results(tmp_path / "a", runs(1000, 4))]
    write_results(tmp_path / "b", runs(850, 4))
    proc = run_perfci("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "d.json"))
    assert proc.returncode == 1, proc.stderr
    head = proc.stdout.splitlines()
    assert head[0].startswith("## perfci diff: B") and "against A" in head[0]
    opening = [line for line in head if line.startswith("- **")][:4]
    assert [line.split("**")[1] for line in opening] == ["What", "How sure", "Why", "Reproduce"]
    assert "throughput −15.0 %" in opening[0] and "against A (4 runs)" in opening[0]
    assert "Blind spot: 4 run(s) of A against 4 of B" in proc.stdout
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["schema"] == "perfci.comparison/1"
    tps = next(m for m in data["cases"][0]["metrics"] if m["key"] == "before.tps")
    assert tps["verdict"] == "regression" and len(tps["baseline"]) == 4
    same = run_perfci("diff", str(a[0].parent), str(a[0].parent))
    assert same.returncode == 0 and "same server version" in same.stdout


@pytest.mark.slow  # several CLI starts
def test_bad_input_is_one_line_and_exit_2(tmp_path):
    [(a, _)] = write_results(tmp_path / "a", [make_result()])
    [(b, _)] = write_results(tmp_path / "b", [make_result(profile="nightly")])
    proc = run_perfci("diff", str(a), str(b))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no case" in proc.stderr
    missing = run_perfci("diff", str(a), str(tmp_path / "nope.json"))
    assert missing.returncode == 2
