"""Interleaved A/B without servers: input checks, the pairing of bursts, the
freezer on a real process, the validity gate and the noise model's arithmetic."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfci.host.freezer import CgroupV1Freezer, SignalFreezer, freezer_for
from perfci.judge.bursts import busy_pairs, pair_table
from perfci.judge.noise import MetricNoise, ab_mde, nightly_mde, tolerance
from perfci.model.bursts import Burst, InterleavedRun
from perfci.model.result import Host
from perfci.model.scenario import cases, load_scenario
from perfci.sessions.interleave import check_memory, check_splittable, pair_order
from perfci.util.errors import BadInput


def plan_of(profile: str, bp: str = "512M"):
    scenario, path = load_scenario("rebuild-after-delete")
    resolved = cases(scenario, profile, str(path))[0]
    return SimpleNamespace(resolved=resolved, scenario_file=path, config_options={"innodb_buffer_pool_size": bp})


def test_a_time_boxed_phase_cannot_be_split_into_bursts():
    check_splittable(plan_of("smoke"), None)  # fixed work: fine
    with pytest.raises(BadInput, match=r"phase before is time-boxed .* `perfci ab --mode rounds`"):
        check_splittable(plan_of("nightly"), None)


def test_two_servers_that_do_not_fit_in_memory_are_refused_before_starting():
    check_memory([plan_of("smoke"), plan_of("smoke")], 24 * 2**30)
    with pytest.raises(BadInput, match=r"buffer pools need ~13\.0 GiB .* 8\.0 GiB available"):
        check_memory([plan_of("smoke", "6G"), plan_of("smoke", "6G")], 8 * 2**30)


def test_abba_order():
    assert [pair_order(k) for k in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def burst(index: int, side: str, tps: float, others: float = 0.0, warmup: bool = False) -> Burst:
    return Burst(phase="before", index=index, side=side, position=0, warmup=warmup, rand_seed=1 + index,
                 transactions=250, duration_s=1.0, metrics={"tps": tps}, host_cpu={"others": others})


def run_of(bursts: list[Burst]) -> InterleavedRun:
    host = Host.model_validate({"hostname": "h", "cpu_model": "c", "cpus": 2, "kernel": "k", "machine": "x"})
    return InterleavedRun(id="r", scenario="s", profile="smoke", case="default", scenario_hash="sha256:x",
                          runner_class="local", host=host, started_at="", finished_at="",
                          burst_transactions={"before": 250}, bursts_per_phase={"before": 4}, warmup_pairs=1,
                          sides=[], bursts=bursts)


def test_pairs_skip_warmup_and_bursts_measured_on_a_busy_host():
    run = run_of([burst(0, "a", 1, warmup=True), burst(0, "b", 2, warmup=True),
                  burst(1, "a", 10), burst(1, "b", 11), burst(2, "a", 20, others=0.9), burst(2, "b", 21),
                  burst(3, "a", 30), burst(3, "b", 31)])
    assert pair_table(run)["before.tps"] == ([10, 30], [11, 31])
    assert busy_pairs(run) == {"before": 1}


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not Path("/sys/fs/cgroup/freezer/cgroup.procs").exists(), reason="no cgroup v1 freezer here")
def test_the_cgroup_v1_freezer_stops_and_resumes_a_process_and_leaves_no_group(sleeper):
    freezer = freezer_for(sleeper.pid)
    assert isinstance(freezer, CgroupV1Freezer)
    freezer.freeze()
    assert (freezer.group / "freezer.state").read_text().strip() == "FROZEN"
    assert state(sleeper.pid) == "D"  # frozen tasks sleep uninterruptibly in the freezer
    freezer.thaw()
    assert state(sleeper.pid) in ("S", "R")  # running again (R for a moment after the thaw)
    freezer.release()
    assert not freezer.group.exists() and str(sleeper.pid) in Path("/sys/fs/cgroup/freezer/cgroup.procs").read_text()


def test_without_a_cgroup_freezer_signals_stop_the_process(sleeper, tmp_path):
    freezer = freezer_for(sleeper.pid, v1_root=tmp_path / "none", v2_root=tmp_path / "none")
    assert isinstance(freezer, SignalFreezer)
    freezer.freeze()  # returns once the stop took effect
    assert state(sleeper.pid) == "T"
    freezer.release()  # returns once it runs again
    assert state(sleeper.pid) in ("S", "R")


def test_minimum_detectable_effects_follow_the_noise():
    quiet = MetricNoise(pair_sd=0.04, block_sd=0.03, lag1=0.0, run_cv=0.003, pairs=80, runs=6, pair_seconds=2.5)
    loud = quiet.model_copy(update={"block_sd": 0.06, "run_cv": 0.10})
    assert nightly_mde(quiet) < 0.02 < nightly_mde(loud)  # type: ignore[operator]
    assert ab_mde(quiet, 60, 16) < ab_mde(loud, 60, 16) < ab_mde(loud, 20, 16)  # type: ignore[operator]
    assert tolerance(quiet) == 0.01 and tolerance(loud) == pytest.approx(0.30)
