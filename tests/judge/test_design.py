"""Sizing an interleaved A/B for a target effect (judge/design.py), and a check of its
formula against the verdict code it sizes for: simulated A/Bs of that size, with
the two noise levels the formula assumes, find the target effect about 90 % of the
time and a true A/A rarely."""

import dataclasses
import math

import numpy as np
import pytest

from perfci.judge import design
from perfci.judge.burst_verdicts import look_alpha
from perfci.judge.paired import judge_instances
from perfci.judge.stats import detectable_shift
from perfci.model.metrics import default_spec
from perfci.model.noise import InstancePrior
from perfci.model.verdicts import Outcome

from conftest import REPO


def test_with_the_runner_default_one_phase_sees_5_percent_within_the_25_minute_budget_and_two_do_not():
    """Sized with the df the verdict has (K - 1 from 4 instance pairs, #55): one phase
    reaches 5 % in budget, at more than twice the cost of 10 %; the default case's two
    phases (twice the pairs, twice the judged metrics) reach ~6.4 %, and say so."""
    five = design.for_case(None, phases=1, judged_per_phase=9, warmup=2)
    ten = design.for_case(None, phases=1, judged_per_phase=9, warmup=2, target=0.10)
    assert five.reaches_target and five.mde <= 0.05 and five.minutes <= 25
    assert ten.reaches_target and ten.minutes < five.minutes / 2
    assert five.instances >= 4  # the between-instance spread only averages out over instances
    assert "12 instance pairs x 24 burst pairs" in five.describe() and "target 5%" in five.describe()
    two = design.for_case(None, phases=2, judged_per_phase=9, warmup=2)
    assert not two.reaches_target and 0.05 < two.mde < 0.07 and two.minutes <= 25
    assert "needs more than the 25-minute budget" in two.describe()


def test_from_four_instance_pairs_sizing_uses_the_centres_df():
    """The verdict from 4 instance pairs may rest on the centres alone (K - 1 df:
    paired.centre_test), so sizing plans with that df, not the bursts'."""
    noise = design.RUNNER_DEFAULT_NOISE
    se = math.sqrt((noise.block_sd ** 2 / 10 + noise.instance_sd ** 2) / 6)
    assert design.mde(noise, 6, 20, 18) == pytest.approx(detectable_shift(design.final_level(6, 18), 5, se))
    assert design.mde(noise, 2, 20, 18) == pytest.approx(
        detectable_shift(design.final_level(2, 18), noise.instance_df + 1,
                         math.sqrt((noise.block_sd ** 2 / 10 + noise.instance_sd ** 2) / 2)))


def test_a_target_out_of_the_budget_gets_the_most_sensitive_size_within_it_and_says_so():
    d = design.for_case(None, phases=2, judged_per_phase=9, warmup=2, target=0.02, budget_minutes=10)
    assert not d.reaches_target and d.minutes <= 10
    cheaper = [design.mde(design.RUNNER_DEFAULT_NOISE, k, n, 18) for k in range(1, 13) for n in range(6, 201, 2)
               if design.minutes(k, n, 2, design.RUNNER_DEFAULT_CYCLE_S) <= 10]
    assert d.mde == pytest.approx(min(cheaper))
    assert "needs more than the 10-minute budget" in d.describe()


def test_fixed_sizes_are_kept_and_named_as_what_set_them():
    d = design.for_case(None, 2, 9, 2, instances=2, bursts=8, fixed="--size profile")
    assert (d.instances, d.bursts) == (2, 8) and not d.reaches_target
    assert "size set by --size profile" in d.describe()
    only_k = design.for_case(None, 2, 9, 2, instances=3)
    assert only_k.instances == 3 and only_k.bursts > 8


def test_more_judged_metrics_and_more_instance_noise_need_bigger_a_bs():
    base = design.mde(design.RUNNER_DEFAULT_NOISE, 6, 20, 18)
    assert design.mde(design.RUNNER_DEFAULT_NOISE, 6, 20, 40) > base
    noisy = design.KeyNoise(design.RUNNER_DEFAULT_BLOCK_SD, 0.04, 10)
    assert design.mde(noisy, 6, 20, 18) > base
    # instance noise is not bought down by bursts: at K = 2 more bursts hit a floor
    assert design.mde(noisy, 2, 400, 18) > 2 * 0.04 / math.sqrt(2)


def _simulated_detection(d: design.Design, noise: design.KeyNoise, effect: float, judged: int, trials: int,
                         seed: int) -> float:
    """Share of simulated A/Bs of size `d` whose tps row is a regression: per instance
    pair a true offset (sd instance_sd), per burst pair independent noise whose two-pair
    blocks have sd block_sd; `judged - 1` other judged metrics of pure noise."""
    rng = np.random.default_rng(seed)
    pair_sd = noise.block_sd * math.sqrt(2)
    specs = {"p.tps": default_spec("tps"), **{f"p.x{i}": default_spec("tps") for i in range(judged - 1)}}
    hits = 0
    for _ in range(trials):
        tables = []
        for _k in range(d.instances):
            table = {}
            for key in specs:
                shift = rng.normal(0, noise.instance_sd) + (math.log(1 - effect) if key == "p.tps" else 0.0)
                a = 1000 * np.exp(rng.normal(0, 0.02, d.bursts))
                b = a * np.exp(shift + rng.normal(0, pair_sd, d.bursts))
                table[key] = (list(a), list(b))
            tables.append(table)
        alpha = design.final_level(d.instances, 1)  # the final look's level (judge/bursts.look_alpha)
        priors = {key: InstancePrior(noise.instance_sd, noise.instance_df) for key in specs}  # as `perfci ab`
        rows = judge_instances(tables, specs, alpha=alpha, priors=priors)
        hits += any(r.key == "p.tps" and r.verdict == Outcome.REGRESSION for r in rows)
    return hits / trials


@pytest.mark.slow
def test_the_sized_a_b_finds_its_target_effect_about_90_percent_of_the_time_and_an_a_a_rarely():
    noise = design.KeyNoise(0.078, 0.015, 4)
    # a cheaper target than 5 % keeps the simulation short; the formula is the same
    d = design.size([noise], design.RUNNER_DEFAULT_CYCLE_S, judged=6, warmup=2, target=0.10)
    assert d.reaches_target
    # the simulated instances carry the prior's sd, and the verdict pools the same prior (as `perfci ab`)
    power = _simulated_detection(d, noise, effect=d.mde, judged=6, trials=150, seed=7)
    false_alarms = _simulated_detection(d, noise, effect=0.0, judged=6, trials=150, seed=8)
    assert power >= 0.80  # 90 % expected; 150 trials: sd ~2.5 points
    assert false_alarms <= 0.03


def test_the_final_level_is_the_sequential_final_share_from_four_instance_pairs():
    class Run:
        planned_instances = 4
        instances = [0, 1, 2, 3]
        alpha = None  # a person's A/B: ALPHA
    assert design.final_level(4, 1) == pytest.approx(look_alpha(Run()))  # type: ignore[arg-type]

    class Nightly(Run):
        alpha = 1 / 600  # the default budget's share for the reference A/B
    assert design.final_level(4, 1, alpha=1 / 600) == pytest.approx(look_alpha(Nightly()))  # type: ignore[arg-type]
    assert design.final_level(3, 2) == pytest.approx(0.005 / 2)


def test_an_a_b_of_one_phase_is_sized_on_that_phases_noise_not_the_noisiest_one():
    """The noise model of 3 real A/As of microbench on this runner (docs/findings): all 19
    phases cannot reach 5 % within 25 minutes (updates without an index hold the size);
    random ranges alone, measured alone (`--phase`), can, and in less time."""

    from perfci.model.noise import NOISE_FILE
    kept = REPO / "docs/findings/data/2026-11-26-calibrate-microbench/noise-model.json"
    model = NOISE_FILE.load(kept)
    every = design.for_case(model, 19, design.DEFAULT_JUDGED_PER_PHASE, 2)
    one = design.for_case(model, 1, design.DEFAULT_JUDGED_PER_PHASE, 2, measured={"random-ranges"})
    assert not every.reaches_target and every.mde > 0.2
    assert one.reaches_target and one.minutes < every.minutes
    assert one.minutes < 5  # random ranges' bursts alone, not a cycle through all 19 phases
    noisy = design.for_case(model, 1, design.DEFAULT_JUDGED_PER_PHASE, 2, measured={"update-no-index"})
    assert noisy.mde > one.mde


def test_one_mapping_turns_a_commands_ab_options_into_its_plan(tmp_path):
    """commands/options.ab_plan: --size profile, --bursts with the warm-up, the noise
    models under --noise-dir, else beside the command's --baseline-dir."""
    from perfci.commands.options import ab_plan

    plan = ab_plan(0.05, 25, "profile", 12, None, 0.01, None, ("after",), 2, baseline_dir=tmp_path / "b")
    assert plan.by_profile and plan.measured_bursts == 10 and plan.phases == ("after",)
    assert plan.noise_root == tmp_path / "b" / "noise"
    assert ab_plan(0.05, 25, "target", None, None, 0.01, tmp_path / "n", baseline_dir=tmp_path / "b").noise_root == \
        tmp_path / "n"


def test_a_learned_instance_spread_below_the_runner_default_sizes_as_the_default():
    """calibrate's estimate is floored at 0 (#55: 0 with 49 df made false alarms 5-10x
    likelier): sizing, like the verdict, never takes one narrower than the key's default;
    a wider one is kept with its df."""
    from perfci.model.noise import MetricNoise
    zero = MetricNoise(pair_sd=0.05, block_sd=0.04, lag1=0.0, run_cv=0.02, pairs=400, runs=25, pair_seconds=3.0,
                       instance_sd=0.0, instance_df=49)
    assert design.key_noise("before.tps", zero) == design.KeyNoise(0.04, design.RUNNER_DEFAULT_INSTANCE_SD,
                                                                  design.RUNNER_DEFAULT_INSTANCE_DF)
    wide = zero.model_copy(update={"instance_sd": 0.03})
    assert design.key_noise("before.tps", wide) == design.KeyNoise(0.04, 0.03, 49)
    counted = design.key_noise("before.instructions_per_txn", zero)
    assert counted.instance_sd == design.WORK_INSTANCE_SD  # its own kind's default, not throughput's


def test_a_many_phase_reference_ab_runs_the_most_suspect_phases_that_still_see_its_limit():
    """#55: the nightly's A/B of microbench's 19 phases sees only ~24 % within its budget at
    its level; the phases chosen are the longest head of the suspects' order that sees
    PHASE_MDE_LIMIT (two at the runner default), at least one whatever it sees."""
    from perfci.judge.budget import IssueBudget
    level = IssueBudget().level("ab")

    def sized(budget: float):
        return lambda phases: design.for_case(None, len(phases), 9, 2, alpha=level, budget_minutes=budget)
    order = [f"p{i}" for i in range(19)]
    assert sized(25)(tuple(order)).mde > 0.2  # the whole case: large steps only
    chosen, size = design.phases_within(order, sized(25))
    assert chosen == ("p0", "p1") and size.mde <= design.PHASE_MDE_LIMIT
    assert sized(25)(("p0", "p1", "p2")).mde > design.PHASE_MDE_LIMIT  # one more would miss it
    # a budget too small for even one phase: the worst one runs, and its size says what it sees
    chosen, size = design.phases_within(order, sized(3))
    assert chosen == ("p0",) and size.mde > design.PHASE_MDE_LIMIT
    with pytest.raises(ValueError):
        design.phases_within([], sized(25))


def pilot_run(block_sd: float, pairs: int = 12, instances: int = 2, effect: float = 0.9, seed: int = 5):
    """A sized A/B's first instance pairs of one phase: B `effect` times A, each instance
    pair offset by its own few percent, burst pairs whose two-pair blocks spread `block_sd`."""
    from perfci.model.bursts import Burst, InstancePair, InterleavedRun
    from perfci.model.result import Host
    rng = np.random.default_rng(seed)
    bursts = []
    for inst in range(instances):
        offset = rng.normal(0, 0.03)
        for i in range(pairs):
            d = offset + math.log(effect) + rng.normal(0, block_sd * math.sqrt(2))  # a pair: 2x a block's variance
            for side, tps in (("a", 1000.0), ("b", 1000.0 * math.exp(d))):
                bursts.append(Burst(phase="p", index=i, side=side, position=0, warmup=False, rand_seed=i,
                                    transactions=100, duration_s=1.0, metrics={"tps": tps}, instance=inst))
    host = Host.model_validate({"hostname": "h", "cpu_model": "c", "cpus": 2, "kernel": "k", "machine": "x"})
    return InterleavedRun(id="r", scenario="s", profile="smoke", case="default", scenario_hash="sha256:x",
                          runner_class="local", host=host, started_at="", finished_at="",
                          burst_transactions={"p": 100}, bursts_per_phase={"p": pairs}, warmup_pairs=0, sides=[],
                          instances=[InstancePair(index=i, first="a") for i in range(instances)], bursts=bursts)


def test_the_internal_pilot_measures_the_bursts_own_block_spread_without_the_effect_or_the_instances():
    for sd in (0.02, 0.08, 0.15):
        measured, blocks = design.within_block_sd(pilot_run(sd, pairs=1000, seed=1), "p.tps")
        assert blocks == 1000 and measured == pytest.approx(sd, rel=0.1)


def test_the_internal_pilot_resizes_a_sized_ab_from_its_own_bursts_within_the_budget():
    """#55: sized from the runner default (a 7.8 % block spread), an A/B whose bursts spread
    2 % needs fewer instance pairs, one whose bursts spread 15 % more; the budget caps them
    at the pace measured, and the line says what it measured and what it sees. A size the
    options fixed, a look that is not the pilot's, or too few blocks: no re-size."""
    noises = design.sized_noises(None, {"p"})
    assert set(noises) == {"p.tps", "p.qps"} and noises["p.tps"] == design.RUNNER_DEFAULT_NOISE
    plan = design.for_case(None, 1, 9, 2, budget_minutes=25)
    assert plan.instances > 4 and plan.reaches_target
    judged = 9
    quiet = design.pilot(pilot_run(0.02, plan.bursts), plan, {"p.tps": noises["p.tps"]}, judged, elapsed_s=240)
    assert quiet is not None and quiet.instances < plan.instances and quiet.mde <= plan.target
    assert quiet.block_sd == pytest.approx(0.02, rel=0.4) and quiet.planned_block_sd == design.RUNNER_DEFAULT_BLOCK_SD
    assert quiet.said(plan.target).startswith(f"internal pilot after 2 instance pairs: their bursts' block spread "
                                              f"{quiet.block_sd:.1%} (the plan assumed 7.8%), 2.0 min an instance pair; "
                                              f"instance pairs {plan.instances} -> {quiet.instances}, seeing")
    noisy = design.pilot(pilot_run(0.15, plan.bursts), plan, {"p.tps": noises["p.tps"]}, judged, elapsed_s=240)
    assert noisy is not None and noisy.instances == design.MAX_INSTANCES and noisy.mde > plan.target
    assert noisy.capped_by == "budget" and "not the target 5%: the budget allows no more" in noisy.said(plan.target)
    fast = design.pilot(pilot_run(0.15, plan.bursts), plan, {"p.tps": noises["p.tps"]}, judged, elapsed_s=60)
    assert fast is not None and fast.instances == design.MAX_INSTANCES and fast.capped_by == "instances"
    assert "not the target 5%: 12 instance pairs are the most an A/B plans" in fast.said(plan.target)
    slow = design.pilot(pilot_run(0.15, plan.bursts), plan, {"p.tps": noises["p.tps"]}, judged, elapsed_s=600)
    # 25 minutes at 5 an instance pair: at most 5, the most sensitive of them (3 pairs keep the
    # prior's df, which 4 and 5 give up for the centres' own K - 1)
    assert slow is not None and slow.instances <= 5 and slow.mde > plan.target
    assert slow.mde == min(design.mde(design.KeyNoise(slow.block_sd, noises["p.tps"].instance_sd,
                                                      noises["p.tps"].instance_df), k, plan.bursts, judged)
                           for k in range(2, 6))
    assert design.pilot(pilot_run(0.02, plan.bursts), dataclasses.replace(plan, fixed="--instances"),
                        {"p.tps": noises["p.tps"]}, judged, 240) is None
    assert design.pilot(pilot_run(0.02, plan.bursts, instances=3), plan, {"p.tps": noises["p.tps"]}, judged,
                        240) is None
    assert design.pilot(pilot_run(0.02, 4), plan, {"p.tps": noises["p.tps"]}, judged, 240) is None  # 4 blocks


def test_the_size_is_typed_with_its_pilot_and_said_by_one_writer():
    """#55 item 5: the A/B's size reaches the verdict and the confirmation typed (planned
    MDE apart from the achieved ones), its line written from that value alone; files of
    the older schemas read with no size."""
    from perfci.model.ab_verdict import AB_VERDICT_FILE, Pilot
    from perfci.model.confirmation import CONFIRMATION_FILE
    plan = design.for_case(None, 1, 9, 2, budget_minutes=25)
    pilot = Pilot(after=2, block_sd=0.142, planned_block_sd=0.078, instance_s=114, planned=plan.instances, instances=9,
                  mde=0.049)
    size = plan.record(pilot)
    assert (size.instances, size.bursts, size.mde, size.target) == (plan.instances, plan.bursts, plan.mde, plan.target)
    assert size.said() == (f"{plan.describe()}; internal pilot after 2 instance pairs: their bursts' block spread 14.2% "
                           f"(the plan assumed 7.8%), 1.9 min an instance pair; instance pairs {plan.instances} -> 9, "
                           "seeing 4.9% at 90 % power")
    assert type(size).model_validate(size.model_dump()) == size
    old = {"schema": "perfci.ab-verdict/1", "outcome": "unchanged", "verdict_line": "x", "mode": "interleaved",
           "scenario": "s", "profile": "smoke", "case": "default", "scenario_hash": "sha256:x", "runner_class": "r",
           "host": "h", "a": {"spec": "local", "version": "1"}, "b": {"spec": "local", "version": "1"},
           "sizing": "12 instance pairs", "metrics": []}
    verdict = AB_VERDICT_FILE.model.model_validate(AB_VERDICT_FILE.upgrade({**old, "parts": [dict(old)]}, "v.json"))
    assert verdict.size is None and verdict.sizing == "12 instance pairs" and verdict.parts[0].size is None
    confirmation = {"schema": "perfci.confirmation/8", "result_id": "r-20261101T000000Z-abcdef", "case": "c",
                    "status": "not-run", "reason": "x", "nightly_regressions": []}
    c = CONFIRMATION_FILE.model.model_validate(CONFIRMATION_FILE.upgrade(confirmation, "c.json"))
    assert c.size is None and c.phases is None and c.schema_ == "perfci.confirmation/9"
