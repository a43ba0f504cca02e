"""compare's work-changed gate: the counters a noise model found deterministic under
fixed work are judged as a family of their own (Bonferroni over its members), more work
per transaction is a regression titled "Work changed", less is reported, not flagged."""

from __future__ import annotations

import json

import pytest

from perfci.alert.regression_issues import lead_first, title_for
from perfci.judge.compare import Rules, compare_cases, family_confidence
from perfci.model.noise import MetricNoise
from perfci.model.result import Result
from perfci.report.markdown import comparison_markdown
from perfci.store.baseline_files import update_baselines
from perfci.store.case_inputs import load_cases
from perfci.store.noise_files import save

from conftest import run_perfci
from factories import make_noise_model, make_result, write_results

WORK = ("before.global_status.Innodb_pages_written", "after.global_status.Innodb_pages_written",
        "before.innodb_cmp.compress_ops", "after.innodb_cmp.compress_ops")


def with_work(scale: float, tps: float = 1000.0) -> Result:
    """A result whose `after` phase wrote `scale` times the pages per transaction."""
    data = json.loads(json.dumps(make_result(tps=tps).dump()))
    counters = data["phases"]["after"]["counters"]["global_status"]
    counters["Innodb_pages_written"] = round(counters["Innodb_pages_written"] * scale)
    return Result.model_validate(data)


def rules_with_model(tmp_path) -> Rules:
    deterministic = MetricNoise(pair_sd=0.001, block_sd=0.001, lag1=0.0, run_cv=0.001, pairs=40, runs=6,
                                pair_seconds=3.0)
    noisy = MetricNoise(pair_sd=0.08, block_sd=0.06, lag1=0.0, run_cv=0.07, pairs=40, runs=6, pair_seconds=3.0)
    save(make_noise_model({**{k: deterministic for k in WORK}, "before.tps": noisy, "after.tps": noisy}),
         tmp_path / "noise")
    return Rules(noise_dir=tmp_path / "noise")


def compared(tmp_path, tonight: Result):
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path / "r", [with_work(1.0, tps=1000 + 5 * i) for i in range(6)]), root=root)
    rules = rules_with_model(tmp_path)
    [comp] = compare_cases(load_cases([tonight], baseline_root=root, noise_dir=rules.noise_dir), rules)
    return comp


def test_more_work_per_transaction_is_flagged_by_the_work_gate_at_the_familys_level(tmp_path):
    comp = compared(tmp_path, with_work(1.05))
    work = {r.key: r for r in comp.rows if r.gate == "work"}
    assert set(work) == set(WORK)
    row = work["after.global_status.Innodb_pages_written"]
    assert row.work_changed and row.verdict.verdict == "regression" and row in comp.regressions
    assert [r.key for r in comp.work_changed] == [row.key]
    assert row.verdict.estimate.confidence == family_confidence(comp.rules.confidence, len(WORK))
    text = comparison_markdown([comp], comp.rules.confidence)
    assert "🔴 work changed (more per txn)" in text
    assert "**Work changed**: 1 of 4 counters" in text and "`after.global_status.Innodb_pages_written` +5.0 %" in text
    assert title_for(comp.identity, lead_first(comp.regressions)) == (
        "Work changed: tiny after: Innodb_pages_written +5.0 % (mariadb-10.11, smoke, local)")
    tps = next(r for r in comp.rows if r.key == "after.tps")  # with a metric beside it, the metric leads
    assert title_for(comp.identity, lead_first([row, tps])).startswith("tiny after: throughput ")
    assert ", Innodb_pages_written +5.0 % (" in title_for(comp.identity, lead_first([row, tps]))


def test_less_work_is_reported_as_work_changed_but_is_no_regression(tmp_path):
    comp = compared(tmp_path, with_work(0.95))
    [row] = comp.work_changed
    assert row.verdict.verdict == "improvement" and not comp.regressions
    assert "work changed (less per txn)" in comparison_markdown([comp], comp.rules.confidence)


def test_the_same_work_flags_nothing_and_says_nothing(tmp_path):
    comp = compared(tmp_path, with_work(1.0))
    assert not comp.work_changed and not comp.regressions
    assert "Work changed" not in comparison_markdown([comp], comp.rules.confidence)


def test_the_family_level_shares_the_rules_level_among_its_members():
    assert family_confidence(0.995, 1) == 0.995
    assert abs(family_confidence(0.995, 50) - (1 - 0.0001)) < 1e-12
    assert family_confidence(0.995, 0) == 0.995


@pytest.mark.slow
def test_the_nightly_judges_with_the_noise_models_of_its_noise_dir(tmp_path):
    """--noise-dir reaches the nightly's verdicts: with the model there (and nowhere
    else), the work gate judges the counters it found deterministic and 5 % more pages
    written per transaction stands; without it, the same night is judged without them."""
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path / "r", [with_work(1.0, tps=1000 + 5 * i) for i in range(6)]), root=root)
    noise_dir = rules_with_model(tmp_path).noise_dir
    assert noise_dir is not None and not (root / "noise").exists()
    [(tonight, _)] = write_results(tmp_path / "tonight", [with_work(1.05)])

    def night(name: str, *extra: str):
        (tmp_path / name).mkdir()
        return run_perfci("nightly", str(tonight), "--history", str(tmp_path / name), "--baseline-dir", str(root),
                          "--min-nights", "1", "--dry-run", "--out", str(tmp_path / name / "issues"), *extra)

    with_model = night("with", "--noise-dir", str(noise_dir))
    assert with_model.returncode == 1, with_model.stderr
    assert "after.global_status.Innodb_pages_written" in with_model.stdout
    without = night("without")
    assert without.returncode == 0, without.stdout + without.stderr
    assert "Innodb_pages_written" not in without.stdout
