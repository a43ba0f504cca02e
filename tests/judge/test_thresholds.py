"""`perfci baseline diff`: what an edit of baselines/ does to the verdicts (the PR check
shows it). The threshold it prints must be exactly where compare starts flagging."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from perfci.judge import thresholds
from perfci.judge.compare import compare_cases
from perfci.model.noise import MetricNoise
from perfci.report.thresholds_report import diff_markdown
from perfci.store.baseline_files import load_baseline, read_tree, update_baselines
from perfci.store.case_inputs import load_cases
from perfci.store.noise_files import save
from perfci.util.errors import BadInput

from conftest import REPO, run_perfci
from factories import make_noise_model, make_result, write_results

CASE = "local/mariadb-10.11/tiny/smoke/default.json"


def baselines(root, tmp_path, tps: list[float]):
    update_baselines(write_results(tmp_path / f"r-{root.name}", [make_result(tps=t) for t in tps]), root=root)
    return root


def noise_model(root, run_cv: float, runs: int = 6) -> None:
    m = MetricNoise(pair_sd=0.05, block_sd=0.04, lag1=0.0, run_cv=run_cv, pairs=40, runs=runs, pair_seconds=3.0,
                    instance_sd=0.01, instance_df=4)
    save(make_noise_model({"before.tps": m, "after.tps": m}, runs=runs), root / "noise")


def test_the_threshold_is_where_compare_starts_flagging(tmp_path):
    root = baselines(tmp_path / "b", tmp_path, [1000, 1030, 980, 1010, 990, 1020])
    [t] = [t for t in thresholds.case_thresholds(load_baseline(root / CASE), None) if t.key == "before.tps"]
    assert t.flagged_at is not None and 0.5 * t.mean < t.flagged_at < 0.95 * t.mean

    def verdict(tps: float) -> str:
        [comp] = compare_cases(load_cases([make_result(tps=tps)], baseline_root=root))
        return next(r.verdict.verdict for r in comp.rows if r.key == "before.tps")

    assert verdict(t.flagged_at * 0.999) == "regression"
    assert verdict(t.flagged_at * 1.001) != "regression"


def test_a_latency_threshold_lies_above_the_mean(tmp_path):
    root = baselines(tmp_path / "b", tmp_path, [1000, 1030, 980, 1010, 990, 1020])
    [t] = [t for t in thresholds.case_thresholds(load_baseline(root / CASE), None) if t.key == "after.latency_ms_avg"]
    assert t.flagged_at is not None and t.flagged_at > t.mean and t.flagged_change > 0


def test_more_samples_and_a_noise_model_move_the_thresholds_and_the_diff_shows_both(tmp_path):
    base = baselines(tmp_path / "base", tmp_path, [1000, 1060, 950, 1040])
    head = tmp_path / "head"
    shutil.copytree(base, head)
    baselines(head, tmp_path, [1010, 990, 1005])  # three more accepted nights
    noise_model(head, run_cv=0.02)
    d = thresholds.diff(read_tree(base), read_tree(head))
    [case] = d.cases
    assert case.path == CASE and case.before and case.after
    before = {t.key: t for t in case.before}["before.tps"]
    after = {t.key: t for t in case.after}["before.tps"]
    assert (before.samples, after.samples) == (4, 7)
    assert after.flagged_at > before.flagged_at  # tighter: a smaller slowdown is flagged now
    [model] = d.models
    assert model.before is None and model.path.startswith("noise/local/")
    text = diff_markdown(d)
    assert text.startswith("**Baseline edit**: 1 pinned baseline(s), 1 noise model(s) changed;")
    tps_line = next(line for line in text.splitlines() if line.startswith("| `before.tps`"))
    assert "4 → 7" in tps_line and tps_line.count("→") >= 3
    assert "(added)" in text and "| `after.tps` | – → 2.0% |" in text


def test_an_unchanged_tree_says_so_and_lists_nothing(tmp_path):
    base = baselines(tmp_path / "base", tmp_path, [1000, 1010, 990])
    head = tmp_path / "head"
    shutil.copytree(base, head)
    d = thresholds.diff(read_tree(base), read_tree(head))
    assert d.empty and diff_markdown(d).startswith("**Baselines unchanged**")


def test_a_noise_model_of_another_scenario_version_is_not_used(tmp_path):
    root = baselines(tmp_path / "b", tmp_path, [1000, 1030, 980, 1010, 990, 1020])
    noise_model(root, run_cv=0.001)
    data = json.loads((root / "noise/local/mariadb-10.11/tiny/smoke/default.json").read_text())
    data["scenario_hash"] = "sha256:bbbb"
    (root / "noise/local/mariadb-10.11/tiny/smoke/default.json").write_text(json.dumps(data))
    baseline = load_baseline(root / CASE)
    tree = read_tree(root)
    with_other = thresholds.case_thresholds(baseline, tree.models[tree.model_of(baseline)])
    assert with_other == thresholds.case_thresholds(baseline, None)


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_broken_head_file_is_one_line_naming_it(tmp_path):
    base = baselines(tmp_path / "base", tmp_path, [1000, 1010, 990])
    head = tmp_path / "head"
    shutil.copytree(base, head)
    (head / CASE).write_text('{"schema": "perfci.baseline/2", "samples": "many"}')
    with pytest.raises(BadInput, match="default.json"):
        thresholds.diff(read_tree(base), read_tree(head))
    done = run_perfci("baseline", "diff", str(base), str(head))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and CASE in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_the_cli_writes_the_report_the_pr_comment_reads(tmp_path):
    base = baselines(tmp_path / "base", tmp_path, [1000, 1060, 950])
    head = tmp_path / "head"
    shutil.copytree(base, head)
    (head / CASE).unlink()
    done = run_perfci("baseline", "diff", str(base), str(head), "--report", str(tmp_path / "ab-baselines.md"),
                      "--json", str(tmp_path / "ab-baselines.json"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "ab-baselines.md").read_text()
    assert text == done.stdout and "(deleted)" in text and "3 → –" in text
    typed = json.loads((tmp_path / "ab-baselines.json").read_text())  # what the PR comment reads
    jsonschema.validate(typed, json.loads((REPO / "docs/schema/check-verdict.schema.json").read_text()))
    assert typed["check"] == "baselines" and typed["outcome"] == "moved" and typed["verdict_line"] == text.splitlines()[0]


def test_a_row_judged_with_a_noise_model_keeps_the_learned_prior_for_the_issues_multi_night_test(tmp_path):
    """#55: the row carries the spread rules its verdict used (the model's run CV and its
    runs' df), so that the issue's test over the nights judges with the same prior."""
    root = baselines(tmp_path / "b", tmp_path, [1000, 1030, 980, 1010, 990, 1020])
    noise_model(root, run_cv=0.02, runs=6)
    [comp] = compare_cases(load_cases([make_result(tps=900)], baseline_root=root))
    row = next(r for r in comp.rows if r.key == "before.tps")
    assert row.rules is not None and (row.rules.prior_cv, row.rules.prior_df) == (0.02, 5)
    plain = next(r for r in comp.rows if r.key == "before.latency_ms_avg")  # not in the model
    assert plain.rules is not None and plain.rules.prior_cv == comp.rules.prior_cv
