"""Verdicts simulated from measured bursts (judge/resample.py): seeded, through the real
verdict code, on A/A runs whose noise is known."""

from __future__ import annotations

import numpy as np

from perfci.judge.resample import blocks_by_phase, simulate
from perfci.model.bursts import Burst, InterleavedRun
from perfci.model.result import Host

PAIRS = 41  # one warm-up pair, 40 measured


def aa_run(seed: int, noise: float = 0.03, b_bias: float = 1.0) -> InterleavedRun:
    """An A/A of the `before` phase: tps with `noise` (log sd) per burst, latency its
    inverse, a counter that does not move, one that is noisy; B scaled by `b_bias`."""
    rng = np.random.default_rng(seed)
    bursts = []
    for k in range(PAIRS):
        for side, bias in (("a", 1.0), ("b", b_bias)):
            tps = 200 * bias * float(np.exp(rng.normal(0, noise)))
            bursts.append(Burst(phase="before", index=k, side=side, position=0, warmup=k == 0, rand_seed=1 + k,
                                transactions=250, duration_s=250 / tps,
                                metrics={"tps": tps, "qps": 10 * tps, "latency_ms_avg": 1000 / tps,
                                         "fsyncs_per_txn": 0.0, "pages_written_per_txn": float(rng.uniform(1, 3))},
                                host_cpu={"others": 0.0}))
    host = Host.model_validate({"hostname": "h", "cpu_model": "c", "cpus": 2, "kernel": "k", "machine": "x"})
    return InterleavedRun(id=f"aa{seed}", scenario="s", profile="smoke", case="default", scenario_hash="sha256:x",
                          runner_class="local", host=host, started_at="", finished_at="",
                          burst_transactions={"before": 250}, bursts_per_phase={"before": PAIRS}, warmup_pairs=1,
                          sides=[], bursts=bursts)


def test_blocks_are_abba_cycles_of_the_judged_metrics_centred_to_no_change():
    pools = blocks_by_phase([aa_run(1, b_bias=1.05), aa_run(2, b_bias=1.05)])
    blocks = pools["before"]
    assert len(blocks) == 2 * 20 and all(len(blk["before.tps"][0]) == 2 for blk in blocks)
    assert set(blocks[0]) == {"before.tps", "before.qps", "before.latency_ms_avg", "before.fsyncs_per_txn",
                              "before.pages_written_per_txn"}
    ratios = [np.log(b / a) for blk in blocks for a, b in zip(*blk["before.tps"])]
    assert abs(float(np.mean(ratios))) < 1e-9  # B's 5 % bias is taken out: the null holds by construction


def test_simulated_aa_stays_quiet_and_a_large_slowdown_is_always_seen():
    runs = [aa_run(seed) for seed in (1, 2, 3)]
    null = simulate(runs, 0.0, pairs=40, trials=400, seed=7)
    assert null.pairs == 40 and null.runs == 400
    assert null.any_regression <= 0.02  # Holm at 0.5 % over 4 judged metrics, 3 % noise
    big = simulate(runs, 0.10, pairs=40, trials=200, seed=7)
    assert big.detected["before"] == 1.0  # 10 % against 3 % pair noise, 20 blocks
    small = simulate(runs, 0.01, pairs=40, trials=200, seed=7)
    assert small.detected["before"] < big.detected["before"]


def test_power_grows_with_the_number_of_pairs():
    runs = [aa_run(seed, noise=0.06) for seed in (4, 5, 6)]
    short = simulate(runs, 0.05, pairs=12, trials=300, seed=3)
    long = simulate(runs, 0.05, pairs=60, trials=300, seed=3)
    assert short.detected["before"] < 0.5 < long.detected["before"]
