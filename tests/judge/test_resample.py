"""Verdicts simulated from measured bursts (judge/resample.py): seeded, through the real
verdict code, on synthetic A/As whose noise is known — including the cases built to
break a simulator that pools bursts across instances: an offset per instance pair,
one odd instance in sixteen, and a slow drift within each instance. For each, the
true false-alarm rate of a verdict configuration is counted on fresh synthetic A/As
judged by the real code, and the simulator, fed with a few of them, must find it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfci.judge.burst_verdicts import judge_run
from perfci.judge.resample import MOVING_BLOCK, instance_pool, simulate, stretch
from perfci.model.bursts import Burst, InstancePair, InterleavedRun
from perfci.model.noise import InstancePrior
from perfci.model.result import Host
from perfci.model.verdicts import Outcome

PAIRS = 41  # one warm-up pair, 40 measured
HOST = Host.model_validate({"hostname": "h", "cpu_model": "c", "cpus": 2, "kernel": "k", "machine": "x"})


def aa_run(seed: int, noise: float = 0.03, b_bias: float = 1.0, instances: int = 1, instance_sd: float = 0.0,
           odd_every: int = 0, odd_offset: float = 0.0, drift_phi: float = 0.0, drift_sd: float = 0.0) -> InterleavedRun:
    """A synthetic A/A of the `before` phase: tps with `noise` (log sd) per burst, latency
    its inverse, a counter that does not move, one that is noisy. B/A of each instance
    pair carries an offset N(0, instance_sd) (plus `odd_offset` on every `odd_every`-th
    instance counted over seeds), and an AR(1) drift over its pairs with stationary sd
    `drift_sd`; B is scaled by `b_bias`."""
    rng = np.random.default_rng(seed)
    bursts = []
    for i in range(instances):
        offset = rng.normal(0, instance_sd) if instance_sd else 0.0
        if odd_every and (seed * instances + i) % odd_every == 0:
            offset += odd_offset
        drift = rng.normal(0, drift_sd) if drift_sd else 0.0
        for k in range(PAIRS):
            if drift_sd:
                drift = drift_phi * drift + rng.normal(0, drift_sd * math.sqrt(1 - drift_phi ** 2))
            for side, shift in (("a", 0.0), ("b", offset + drift)):
                tps = 200 * b_bias ** (side == "b") * float(np.exp(rng.normal(0, noise) + shift))
                bursts.append(Burst(phase="before", index=k, side=side, position=0, warmup=k == 0, rand_seed=1 + k,
                                    transactions=250, duration_s=250 / tps, instance=i,
                                    metrics={"tps": tps, "qps": 10 * tps, "latency_ms_avg": 1000 / tps,
                                             "fsyncs_per_txn": 0.0, "pages_written_per_txn": float(rng.uniform(1, 3))},
                                    host_cpu={"others": 0.0}))
    return InterleavedRun(id=f"aa{seed}", scenario="s", profile="smoke", case="default", scenario_hash="sha256:x",
                          runner_class="local", host=HOST, started_at="", finished_at="",
                          burst_transactions={"before": 250}, bursts_per_phase={"before": PAIRS}, warmup_pairs=1,
                          sides=[], instances=[InstancePair(index=i, first="a") for i in range(instances)],
                          bursts=bursts)


def true_false_alarms(trials: int, first_seed: int, instances: int, priors, **noise) -> float:
    """Fresh synthetic A/As judged as `perfci ab` judges them: the rate to be found."""
    alarms = 0
    for seed in range(first_seed, first_seed + trials):
        rows = judge_run(aa_run(seed, instances=instances, **noise), [], 0.01, priors=priors)
        alarms += any(r.spec is not None and r.verdict == Outcome.REGRESSION for r in rows)
    return alarms / trials


def test_the_pool_keeps_instances_whole_and_centres_each_metric_once():
    runs = [aa_run(1, b_bias=1.05, instances=2), aa_run(2, b_bias=1.05, instances=2)]
    pool = instance_pool(runs)
    assert len(pool) == 4 and all(len(t["before.tps"][0]) == PAIRS - 1 for t in pool)
    assert set(pool[0]) == {"before.tps", "before.qps", "before.latency_ms_avg", "before.fsyncs_per_txn",
                            "before.pages_written_per_txn"}
    ratios = [np.log(b / a) for t in pool for a, b in zip(*t["before.tps"])]
    assert abs(float(np.mean(ratios))) < 1e-9  # B's 5 % bias is taken out: the null holds by construction


def test_a_stretch_is_one_window_or_moving_blocks_of_one_instance():
    rng = np.random.default_rng(0)
    window = stretch(40, 10, rng)
    assert window == list(range(window[0], window[0] + 10))
    long = stretch(10, 25, rng)
    assert len(long) == 25 and all(0 <= j < 10 for j in long)
    blocks = [long[i:i + MOVING_BLOCK] for i in range(0, 24, MOVING_BLOCK)]
    assert all(b == list(range(b[0], b[0] + len(b))) for b in blocks)


@pytest.mark.parametrize("case", [
    {"instance_sd": 0.011},                       # every instance pair its own offset
    {"odd_every": 16, "odd_offset": -0.04},       # one odd instance in sixteen
    {"drift_phi": 0.97, "drift_sd": 0.02},        # slow drift within an instance
], ids=["instance-bias", "odd-instance", "slow-drift"])
@pytest.mark.slow
def test_the_simulator_finds_the_false_alarms_a_bursts_only_verdict_really_has(case):
    """The burst-only verdict (one instance pair, no between-instance prior) on data whose
    instances differ: its true false-alarm rate is far above the nominal 0.5 %, and the
    simulator, fed with 40 A/As of 2 instance pairs, finds it within a factor of two.
    (The old simulator, pooling two-pair blocks across instances, said ~0.1 % here.)"""
    truth = true_false_alarms(300, 1000, 1, None, **case)
    assert truth >= 0.03, truth   # the case breaks the bursts-only assumption
    runs = [aa_run(seed, instances=2, **case) for seed in range(1, 41)]
    simulated = simulate(runs, 0.0, pairs=PAIRS - 1, trials=300, seed=7, instances=1, priors={}).any_regression
    assert truth / 2 <= simulated <= truth * 2, (simulated, truth)


@pytest.mark.slow
def test_with_instance_pairs_and_the_learned_spread_the_false_alarms_fall_back():
    """The same instance bias judged as `perfci ab` does now (4 instance pairs, the
    between-instance spread as the prior): false alarms back near the nominal level,
    on fresh A/As and in the simulator alike."""
    priors = {k: InstancePrior(0.011, 15) for k in ("before.tps", "before.qps", "before.latency_ms_avg")}
    truth = true_false_alarms(200, 2000, 4, priors, instance_sd=0.011)
    runs = [aa_run(seed, instances=2, instance_sd=0.011) for seed in range(1, 9)]
    simulated = simulate(runs, 0.0, pairs=PAIRS - 1, trials=300, seed=7, instances=4, priors=priors).any_regression
    assert truth <= 0.02 and simulated <= 0.02, (truth, simulated)


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_simulated_aa_stays_quiet_and_a_large_slowdown_is_always_seen():
    runs = [aa_run(seed, instances=2) for seed in (1, 2, 3)]
    null = simulate(runs, 0.0, pairs=40, trials=300, seed=7)
    assert null.pairs == 40 and null.runs == 300 and null.instances == 2 and null.pool == 6
    assert null.any_regression <= 0.02
    big = simulate(runs, 0.10, pairs=40, trials=200, seed=7)
    assert big.detected["before"] == 1.0  # 10 % against 3 % pair noise
    small = simulate(runs, 0.01, pairs=40, trials=200, seed=7)
    assert small.detected["before"] < big.detected["before"]


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_power_grows_with_the_number_of_pairs():
    runs = [aa_run(seed, noise=0.06, instances=2) for seed in (4, 5, 6)]
    short = simulate(runs, 0.08, pairs=8, trials=300, seed=3)
    long = simulate(runs, 0.08, pairs=80, trials=300, seed=3)
    assert short.detected["before"] < 0.5 < long.detected["before"]


def with_a_shorter_phase(run: InterleavedRun, pairs: int) -> InterleavedRun:
    """The run with an `after` phase of `pairs` pairs (its `before`'s first ones, renamed):
    a real A/A's phases differ in length (a time-boxed or a resized phase)."""
    after = [b.model_copy(update={"phase": "after"}) for b in run.bursts if b.index < pairs]
    return run.model_copy(update={"bursts": [*run.bursts, *after],
                                  "burst_transactions": {**run.burst_transactions, "after": 250},
                                  "bursts_per_phase": {**run.bursts_per_phase, "after": pairs}})


def test_phases_of_unequal_length_are_drawn_each_within_its_own_pairs():
    """Real A/As whose phases have different pair counts (IndexError before: every phase
    was indexed with the first phase's window)."""
    from perfci.judge.resample import draw, phase_lengths
    runs = [with_a_shorter_phase(aa_run(seed, instances=2), 12) for seed in (1, 2)]
    pool = instance_pool(runs)
    assert {tuple(sorted(phase_lengths(t).items())) for t in pool} == {(("after", 11), ("before", PAIRS - 1))}
    for pairs in (8, 30):  # one window in `after`, and moving blocks past its 11 pairs
        tables = draw(pool, 3, pairs, 0.0, np.random.default_rng(5))
        assert all(len(a) == pairs for t in tables for a, _ in t.values())
    rate = simulate(runs, 0.0, pairs=30, trials=20, seed=3, instances=2)
    assert set(rate.detected) == {"after", "before"} and rate.runs == 20
