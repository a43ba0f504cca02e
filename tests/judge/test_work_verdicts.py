"""Counted work (`perfci ab --measure work`) as the judge sees it: instructions per
transaction are judged whatever the scenario's `compare:` lists, with their own
between-instance prior and a smaller minimum effect, and an A/B of them is sized from
their own noise."""

from __future__ import annotations

import numpy as np

from perfci.judge import design
from perfci.judge.burst_verdicts import judge_run, judged_specs
from perfci.judge.paired import WORK_INSTANCE_SD, WORK_MIN_EFFECT, runner_default_prior
from perfci.model.bursts import Burst, InstancePair, InterleavedRun, SideInfo
from perfci.model.metrics import WORK_METRIC, presentation
from perfci.model.result import Host
from perfci.model.scenario import CompareSpec
from perfci.model.verdicts import Outcome

HOST = Host(hostname="h", cpu_model="c", cpus=2, kernel="k")


def work_run(seed: int, effect: float, instances: int = 4, pairs: int = 8, burst_sd: float = 0.001,
             instance_sd: float = 0.001) -> InterleavedRun:
    """A counted A/B of one phase: instructions per transaction around 43,000 (a point
    select), B scaled by 1 + effect, `burst_sd` per burst and `instance_sd` per instance
    pair (log scale, as the stability A/As measured them)."""
    rng = np.random.default_rng(seed)
    bursts = []
    for i in range(instances):
        offset = rng.normal(0, instance_sd)
        for k in range(pairs):
            for side, shift in (("a", 0.0), ("b", offset + np.log1p(effect))):
                value = 43_000 * float(np.exp(rng.normal(0, burst_sd) + shift))
                bursts.append(Burst(phase="point", index=k, side=side, position=0, warmup=k < 2, rand_seed=1 + k,
                                    transactions=500, duration_s=0.7, instance=i,
                                    metrics={WORK_METRIC: value, "index_page_splits_per_txn": 0.0},
                                    host_cpu={"others": 0.0}))
    return InterleavedRun(id=f"w{seed}", scenario="s", profile="smoke", case="default", scenario_hash="sha256:x",
                          runner_class="local", host=HOST, started_at="", finished_at="",
                          burst_transactions={"point": 500}, bursts_per_phase={"point": pairs}, warmup_pairs=2,
                          sides=[SideInfo(name=n, spec="local", described="local", flavor="mariadb",
                                          full_version="10.11.19", line="mariadb-10.11", freezer="cgroup v1 freezer",
                                          work="instructions counted by callgrind inside do_command(THD*, bool)")
                                 for n in "ab"],
                          instances=[InstancePair(index=i, first="a") for i in range(instances)],
                          bursts=bursts, measure="work")


def test_instructions_are_judged_even_when_the_scenario_lists_other_metrics():
    table = {f"point.{WORK_METRIC}": ([1.0], [1.0]), "point.tps": ([1.0], [1.0])}
    specs = judged_specs(table, [CompareSpec(metric="tps")])
    assert set(specs) == {f"point.{WORK_METRIC}", "point.tps"}
    assert specs[f"point.{WORK_METRIC}"].tolerance == 0.01  # `unchanged` only within ±1 %
    assert presentation(f"point.{WORK_METRIC}") == ("instructions", "instructions per transaction")


def test_counted_instructions_have_their_own_prior_not_throughputs_or_a_counters():
    prior = runner_default_prior(f"point.{WORK_METRIC}")
    assert prior.sd == WORK_INSTANCE_SD < runner_default_prior("point.tps").sd
    assert runner_default_prior("point.index_page_splits_per_txn").sd > prior.sd


def test_a_one_percent_step_in_counted_work_is_a_regression_and_none_is_not():
    """Four instance pairs of six measured burst pairs at the stability A/As' noise: a 1 %
    step is flagged (above the 0.5 % minimum effect of counted work, below time's 1 %
    of --min-effect it would not be: judged at min(--min-effect, 0.5 %)); an A/A is not."""
    key = f"point.{WORK_METRIC}"
    rows = {r.key: r for r in judge_run(work_run(1, 0.01), [], 0.01)}
    assert rows[key].verdict == Outcome.REGRESSION and rows[key].estimate is not None
    assert 1.005 < rows[key].estimate.ratio < 1.015
    flagged = sum(any(r.verdict == Outcome.REGRESSION for r in judge_run(work_run(seed, 0.0), [], 0.01))
                  for seed in range(200))
    assert flagged <= 2  # 0.5 % per A/B, family-wise
    # a significant 0.3 % step is below counted work's minimum effect: not a regression
    small = {r.key: r for r in judge_run(work_run(3, 0.003, burst_sd=0.0002, instance_sd=0.0), [], 0.01)}
    assert small[key].verdict != Outcome.REGRESSION and WORK_MIN_EFFECT > 0.003


def test_a_work_ab_is_sized_from_counted_noise_for_its_one_percent_target_in_minutes():
    one = design.for_case(None, phases=1, judged_per_phase=9, warmup=2, target=0.01, measure="work")
    timed = design.for_case(None, phases=1, judged_per_phase=9, warmup=2, target=0.01)
    assert one.reaches_target and one.minutes <= 10, one.describe()
    assert not timed.reaches_target and timed.mde > 3 * one.mde  # time cannot see 1 % within 25 minutes
    assert "counted work's runner default" in one.describe()


def test_a_counted_noise_model_is_kept_beside_the_timed_one_and_sizes_work_abs(tmp_path):
    """calibrate --measure work learns from counted A/As; the model is stored apart from the
    timed model of the same case (one never replaces the other), found only by a counting
    A/B, and sizes it from its own instructions' noise."""
    from perfci.judge.calibration import learn
    from perfci.store import noise_files

    model = learn([work_run(seed, 0.0, instances=3) for seed in range(3)], "2026-11-28T00:00:00+00:00")
    assert model.measure == "work" and "point.instructions_per_txn" in model.metrics
    path = noise_files.save(model, tmp_path)
    assert path.name == "default.work.json"
    args = (tmp_path, "local", model.server_line, "s", "smoke", "default", ("sha256:x",))
    assert noise_files.find_current(*args, measure="work")[0] == model
    assert noise_files.find_current(*args)[0] is None
    sized = design.for_case(model, 1, 9, 2, 0.01, measure="work")
    assert sized.reaches_target and "the noise model of 3 A/As" in sized.describe()


def test_a_phase_that_writes_or_runs_several_clients_gets_the_contended_counted_prior():
    from perfci.judge.calibration import priors_for
    from perfci.judge.paired import WORK_CONTENDED_INSTANCE_SD

    key = f"point.{WORK_METRIC}"
    reading = work_run(1, 0.0)
    assert priors_for(reading, None)[0][key].sd == WORK_INSTANCE_SD
    writing = reading.model_copy(update={"bursts": [b.model_copy(update={"metrics": {
        **b.metrics, "global_status.Com_update": 1.0}}) for b in reading.bursts]})
    assert priors_for(writing, None)[0][key].sd == WORK_CONTENDED_INSTANCE_SD
    clients = reading.model_copy(update={"threads": {"point": 4}})
    assert priors_for(clients, None)[0][key].sd == WORK_CONTENDED_INSTANCE_SD
    assert "instructions of one client reading" in priors_for(reading, None)[1]


def test_a_counted_ab_says_which_functions_did_the_extra_work_from_its_bursts_function_counts():
    from perfci.judge.work_profile import phase_shift
    from perfci.report.work_why import work_why_section
    from perfci.run.work import FunctionCounts
    from perfci.sessions.interleave import FunctionTotals
    from perfci.sessions.sized_ab import counted_shifts
    totals = FunctionTotals()
    a_own = {"do_command": 1_000, "parse": 10_000_000, "execute": 11_000_000, "rare": 1_000}
    b_own = {**a_own, "pfs_start_statement": 2_000_000}
    for _ in range(2):  # two measured bursts a side, 500 transactions each; do_command calls the others
        totals.add("point", "a", FunctionCounts(a_own, {**a_own, "do_command": sum(a_own.values())}), 500)
        totals.add("point", "b", FunctionCounts(b_own, {**b_own, "do_command": sum(b_own.values()),
                                                        "execute": 13_000_000}), 500)
    functions = totals.per_transaction()
    assert functions["point"]["a"] == {"execute": 22_000.0, "parse": 20_000.0, "pfs_start_statement": 0.0}
    assert "rare" not in functions["point"]["b"]  # under 0.1 % of both sides: left out
    inclusive = totals.per_transaction(inclusive=True)
    assert inclusive["point"]["b"]["do_command"] == 46_004.0 and inclusive["point"]["a"]["do_command"] == 42_004.0
    run = work_run(3, 0.05).model_copy(update={"work_functions": functions, "work_inclusive": inclusive})
    shift = phase_shift(run, "point")
    # the totals are the bursts' own counts (all functions), ~43,000 and 5 % more on B
    assert shift is not None and abs(shift.total_a / 43_000 - 1) < 0.01 and abs(shift.total_b / shift.total_a - 1.05) < 0.01
    assert [f.name for f in shift.functions] == ["pfs_start_statement"]  # what did not move is not listed
    # the call path: do_command holds the whole move, execute (which called it) most of it
    assert [(f.name, f.inclusive_delta) for f in shift.path] == [
        ("do_command", 4_000.0), ("execute", 4_000.0), ("pfs_start_statement", 4_000.0)]
    text = work_why_section([shift])
    assert text.startswith("### Why: where the instructions went (callgrind)")
    assert f"| `pfs_start_statement` | 0 | 4,000 | +4,000 | {4_000 / shift.delta:.1%} | +4,000 |" in text
    assert "The call path into it" in text and "`do_command` +4,000 → `execute` +4,000" in text
    older = phase_shift(run.model_copy(update={"work_inclusive": {}}), "point")  # a bursts file from before
    assert older is not None and older.path == [] and "| – |" in work_why_section([older])
    assert f"B ran +{shift.delta:,.0f} instructions per transaction (+{shift.delta / shift.total_a:.2%})" in text
    rows = judge_run(run, [], 0.01)
    assert counted_shifts(run, rows, "auto") == [shift]  # the instructions regressed: explained
    assert counted_shifts(run, rows, "never") == []
    same = work_run(4, 0.0).model_copy(update={"work_functions": functions})
    assert counted_shifts(same, judge_run(same, [], 0.01), "auto") == []  # nothing regressed: no Why
    assert counted_shifts(same, judge_run(same, [], 0.01), "always") != []


def test_a_counted_burst_is_never_dropped_for_a_busy_host_a_timed_one_is():
    from perfci.judge.burst_verdicts import busy, busy_pairs
    loaded = work_run(5, 0.0)
    loaded = loaded.model_copy(update={"bursts": [b.model_copy(update={"host_cpu": {"others": 1.9}})
                                                  for b in loaded.bursts]})
    assert not any(busy(b) for b in loaded.bursts) and set(busy_pairs(loaded).values()) == {0}
    timed = loaded.bursts[0].model_copy(update={"metrics": {"tps": 100.0}})
    assert busy(timed)


def test_a_learned_prior_narrower_than_the_default_judges_as_the_default_and_a_wider_one_as_learned():
    """#55: the verdict never takes a learned between-instance spread narrower than its
    kind's default (calibrate's estimate is floored at 0; 0 with 49 df made false alarms
    5-10x likelier); a wider one keeps its df; the source line says so."""
    from perfci.judge.calibration import priors_for
    from perfci.model.noise import MetricNoise

    from factories import make_noise_model

    key = f"point.{WORK_METRIC}"
    run = work_run(1, 0.0)
    noise = MetricNoise(pair_sd=0.001, block_sd=0.001, lag1=0.0, run_cv=0.001, pairs=80, runs=25, pair_seconds=3.0,
                        instance_sd=0.0, instance_df=49)
    priors, source = priors_for(run, make_noise_model({key: noise}))
    assert (priors[key].sd, priors[key].df) == (WORK_INSTANCE_SD, 4)
    assert "where wider than the runner default" in source
    wide = make_noise_model({key: noise.model_copy(update={"instance_sd": 0.02})})
    assert (priors_for(run, wide)[0][key].sd, priors_for(run, wide)[0][key].df) == (0.02, 49)
