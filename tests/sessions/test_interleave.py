"""Interleaved A/B without servers: input checks, the pairing of bursts, the
freezer on a real process, the validity gate and the noise model's arithmetic."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from perfci.host.freezer import CgroupV1Freezer, SignalFreezer, freezer_for
from perfci.judge import design
from perfci.judge.burst_verdicts import busy_pairs, judge_run, pair_table, work_differences
from perfci.judge.calibration import nightly_mde, tolerance
from perfci.model.bursts import Burst, InstancePair, InterleavedRun, SideInfo
from perfci.model.noise import MetricNoise
from perfci.model.result import Host
from perfci.model.scenario import cases, load_scenario
from perfci.report.interleaved import interleaved_markdown
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
    # a burst is busy by the same limit as a run's phase (host/policy.py): 0.3 cores of others
    run = run_of([burst(1, "a", 10), burst(1, "b", 11), burst(2, "a", 20, others=0.3), burst(2, "b", 21),
                  burst(3, "a", 30), burst(3, "b", 31, others=0.25)])
    assert pair_table(run)["before.tps"] == ([10, 30], [11, 31]) and busy_pairs(run) == {"before": 1}


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
    quiet_key, loud_key = (design.KeyNoise(m.block_sd, 0.0, 0) for m in (quiet, loud))  # bursts only
    assert design.mde(quiet_key, 2, 60, 16) < design.mde(loud_key, 2, 60, 16) < design.mde(loud_key, 2, 20, 16)
    # 2 x the 90 % upper bound of the CV: from 6 runs, 1.76 x what they showed (chi-square, 5 df)
    assert tolerance(loud) == pytest.approx(2 * 0.10 * 1.7621, rel=1e-3)
    assert tolerance(quiet.model_copy(update={"run_cv": 0.001})) == 0.01  # never below the 1 % floor
    many = loud.model_copy(update={"runs": 40})
    assert tolerance(many) == pytest.approx(2 * 0.10 * 1.1761, rel=1e-3)  # more runs, a tighter bound


def work_run(rng, b_speed: float, b_deletes: float, b_version: str = "10.11.19") -> InterleavedRun:
    """12 measured pairs, ~3 % burst noise; B's speed and Handler_delete per transaction
    as given (A: 2.00, as every rebuild of the same seeded work)."""
    bursts = []
    for k in range(13):
        tps = 100 * float(np.exp(rng.normal(0, 0.03)))
        for side, speed, deletes in (("a", 1.0, 2.0), ("b", b_speed, b_deletes)):
            bursts.append(Burst(phase="before", index=k, side=side, position=0, warmup=k == 0, rand_seed=1 + k,
                                transactions=250, duration_s=1.0, host_cpu={"others": 0.0},
                                metrics={"tps": tps * speed * float(np.exp(rng.normal(0, 0.01))),
                                         "global_status.Handler_delete": deletes,
                                         "global_status.Com_show_status": 0.1 if side == "a" else 0.2}))
    sides = [SideInfo(name=n, spec="local", described="local", flavor="mariadb", full_version=v,
                      line="mariadb-10.11", freezer="cgroup v1 freezer") for n, v in (("a", "10.11.19"), ("b", b_version))]
    return run_of(bursts).model_copy(update={"bursts_per_phase": {"before": 13}, "sides": sides})


def test_sides_that_did_different_work_get_no_verdict_on_time_and_the_report_says_which_counters():
    rng = np.random.default_rng(12)
    # the rebuild that deleted less (1.76 instead of 2.00 per transaction) and ran faster
    run = work_run(rng, 1.3, 1.76)
    [diff] = work_differences(run)   # perfci's own SHOW STATUS differing is not the workload's work
    assert diff.key == "before.global_status.Handler_delete" and diff.relative == pytest.approx(0.12)
    rows = {r.key: r for r in judge_run(run, [], 0.01)}
    assert rows["before.tps"].verdict == "inconclusive" and "did different work" in rows["before.tps"].reason
    text = interleaved_markdown(run, list(rows.values()), 0.01)
    assert text.splitlines()[2].startswith("**Did different work**: `before.global_status.Handler_delete` 2 on A "
                                           "vs 1.76 on B per transaction")
    assert "### The sides did different work" in text
    # the same work, B 30 % slower: a regression, and nothing said about work
    run = work_run(rng, 0.7, 2.0)
    assert work_differences(run) == []
    rows = {r.key: r for r in judge_run(run, [], 0.01)}
    assert rows["before.tps"].verdict == "regression"
    # another build doing other server work for the same statements: that is what is tested
    run = work_run(rng, 0.7, 1.76, b_version="11.4.5")
    assert work_differences(run) == []
    assert {r.key: r for r in judge_run(run, [], 0.01)}["before.tps"].verdict == "regression"
    text = interleaved_markdown(run, list(rows.values()), 0.01)
    assert text.splitlines()[2].startswith("**Regression** in ") and "different work" not in text


def test_a_phase_of_several_clients_is_held_to_the_statements_it_sent_within_one_percent():
    """Four client threads share the seeded events as the scheduler lets them: real A/As
    at four threads differed by 2-9 % in Handler_ counters (other rows touched) and a few
    restarted transactions re-sent their statements."""
    rng = np.random.default_rng(14)
    run = work_run(rng, 1.0, 1.9)  # Handler_delete 5 % apart
    assert [d.key for d in work_differences(run)] == ["before.global_status.Handler_delete"]
    concurrent = run.model_copy(update={"threads": {"before": 4}})
    assert concurrent.threads_of("before") == 4 and concurrent.threads_of("after") == 1
    assert work_differences(concurrent) == []
    resent = [b.model_copy(update={"metrics": {**b.metrics, "global_status.Com_select": 10.0 * (1.005 if b.side == "b"
                                                                                               else 1.0)}})
              for b in concurrent.bursts]
    assert work_differences(concurrent.model_copy(update={"bursts": resent})) == []  # 0.5 %: restarts
    sent_more = [b.model_copy(update={"metrics": {**b.metrics, "global_status.Com_select": 10.0 * (1.05 if b.side == "b"
                                                                                                  else 1.0)}})
                 for b in concurrent.bursts]
    [diff] = work_differences(concurrent.model_copy(update={"bursts": sent_more}))
    assert diff.key == "before.global_status.Com_select" and diff.relative == pytest.approx(0.05 / 1.05)


def test_a_sequential_ab_looks_once_at_half_its_instance_pairs_and_the_levels_add_up_to_alpha():
    from perfci.judge.burst_verdicts import INTERIM_SHARE, interim_look, look_alpha
    from perfci.judge.paired import ALPHA
    from perfci.sessions.sized_ab import clear_at_interim
    assert [interim_look(k) for k in (1, 2, 3, 4, 5, 6, 8)] == [None, None, None, 2, 2, 3, 4]
    rng = np.random.default_rng(13)
    base = work_run(rng, 0.7, 2.0)
    two = base.model_copy(update={"instances": [InstancePair(index=i, first="a") for i in range(2)],
                                  "bursts": [*base.bursts, *(b.model_copy(update={"instance": 1}) for b in base.bursts)]})
    assert look_alpha(two) == ALPHA  # two planned: one look, the whole level
    interim = two.model_copy(update={"planned_instances": 4})
    assert look_alpha(interim) == ALPHA * INTERIM_SHARE
    final = interim.model_copy(update={"instances": [InstancePair(index=i, first="a") for i in range(4)]})
    assert look_alpha(final) == ALPHA * (1 - INTERIM_SHARE)
    assert look_alpha(interim) + look_alpha(final) == pytest.approx(ALPHA)
    # B 30 % slower: clear at the interim look; not looked at before it
    why = clear_at_interim(interim, [], 0.01, None)
    assert why is not None and why.startswith("regression already clear at the interim look (before.tps")
    one = interim.model_copy(update={"instances": interim.instances[:1]})
    assert clear_at_interim(one, [], 0.01, None) is None
    same = work_run(rng, 1.0, 2.0)
    aa = same.model_copy(update={"instances": [InstancePair(index=i, first="a") for i in range(2)],
                                 "bursts": [*same.bursts, *(b.model_copy(update={"instance": 1}) for b in same.bursts)],
                                 "planned_instances": 4})
    assert clear_at_interim(aa, [], 0.01, None) is None


def test_a_sized_ab_stops_before_a_pair_that_would_end_past_its_budget_unless_the_options_fixed_its_size():
    from perfci.judge import design
    from perfci.judge.burst_verdicts import look_alpha
    from perfci.judge.paired import ALPHA
    from perfci.sessions.sized_ab import AbPlan, stop_early
    # 2 of 6 pairs in 3.5 minutes of a 5-minute budget: the third would end at 5.25 > 5 (a
    # deadline, no slack); in 200 s it ends at 300 s, on the budget
    assert design.past_budget(2, 6, 210, 5).startswith("the next instance pair would end past the 5-minute budget")
    assert design.past_budget(2, 6, 200, 5) is None
    assert design.past_budget(6, 6, 3600, 5) is None and design.past_budget(0, 6, 3600, 5) is None
    rng = np.random.default_rng(14)
    same = work_run(rng, 1.0, 2.0)
    run = same.model_copy(update={"instances": [InstancePair(index=0, first="a")], "planned_instances": 6})
    sized = design.Design(instances=6, bursts=6, mde=0.01, minutes=4, target=0.01, budget_minutes=5, source="x")
    kind, why = stop_early(run, [], AbPlan(), sized, None, 400.0)
    assert kind == "budget" and "5-minute budget" in why
    assert stop_early(run, [], AbPlan(), sized, None, 100.0) is None
    fixed = design.Design(instances=6, bursts=6, mde=0.01, minutes=4, target=0.01, budget_minutes=5, source="x",
                          fixed="--instances")
    assert stop_early(run, [], AbPlan(), fixed, None, 4000.0) is None
    # stopped by the budget before the interim look: judged at the interim's share (valid, conservative)
    assert look_alpha(run.model_copy(update={"stopped": "budget"})) < ALPHA


def test_server_cpu_per_transaction_from_the_threads_schedstat():
    import os

    from perfci.host import hostcpu
    from perfci.sessions.interleave import server_cpu_metrics
    before = hostcpu.thread_cpu_ns(os.getpid())
    sum(i * i for i in range(300_000))  # this thread burns some CPU
    deltas = hostcpu.thread_cpu_deltas(before, hostcpu.thread_cpu_ns(os.getpid()))
    assert before and deltas and sum(deltas) > 1_000_000  # nanoseconds: > 1 ms of work measured
    assert hostcpu.thread_cpu_ns(None) is None and hostcpu.thread_cpu_ns(2 ** 22 + 7) is None
    m = server_cpu_metrics([3_000_000, 1_000_000], 1000, threads=1)
    assert m == {"server_cpu_us_per_txn": 4.0, "statement_cpu_us_per_txn": 3.0}
    assert server_cpu_metrics([3_000_000, 1_000_000], 1000, threads=4) == {"server_cpu_us_per_txn": 4.0}
    assert server_cpu_metrics([], 1000, threads=1) == {}


def test_the_internal_pilots_re_plan_runs_as_many_instance_pairs_as_it_says(monkeypatch):
    """run_interleaved(resize=): after each instance pair the pilot may plan another number
    of them; the loop then runs that many (never fewer than have run), records the plan in
    the run, takes the stop look against it, and hands only the last pair to `last_pair`.
    The servers and their bursts are stood in for (this is the loop, not a measurement)."""
    from contextlib import nullcontext

    from perfci.sessions import interleave
    from perfci.sessions.rounds import Side

    plan = SimpleNamespace(resolved=plan_of("smoke").resolved, provider=SimpleNamespace(workdir=Path("/tmp")), work=None)
    host = Host.model_validate({"hostname": "h", "cpu_model": "c", "cpus": 2, "kernel": "k", "machine": "x"})
    monkeypatch.setattr(interleave.hostinfo, "host_record", lambda workdir, runner_class: host)
    monkeypatch.setattr(interleave, "SideServer", lambda side, plan, progress: SimpleNamespace(side=side))
    monkeypatch.setattr(interleave, "both_running", lambda servers: nullcontext())
    monkeypatch.setattr(interleave, "side_info", lambda s, sql: None)
    monkeypatch.setattr(interleave, "InterleavedRun", lambda **fields: SimpleNamespace(
        **fields, model_copy=lambda update: SimpleNamespace(**{**fields, **update})))
    ran: list[int] = []
    monkeypatch.setattr(interleave, "_instance_bursts",
                        lambda servers, index, *rest: ran.append(index) or [burst(index, "a", 1.0)])

    def run(planned: int, resized: dict[int, int]):
        looks, last = [], []
        done = interleave.run_interleaved(
            [plan, plan], (Side("a", "local", []), Side("b", "local", [])), interleave.Progress(quiet=True), "local",
            bursts=6, instances=planned, replan=lambda: [plan, plan],
            resize=lambda partial: resized.get(len(partial.instances)),
            stop=lambda partial: looks.append((len(partial.instances), partial.planned_instances)),
            last_pair=lambda partial, servers, first: last.append(len(partial.instances)))
        return done, looks, last
    ran.clear()
    done, looks, last = run(12, {2: 4})  # the pilot after two pairs: four are enough
    assert ran == [0, 1, 2, 3] and done.planned_instances == 4 and last == [4]
    assert looks == [(1, 12), (2, 4), (3, 4)]  # the stop look sees the plan as it stands
    ran.clear()
    done, looks, last = run(3, {2: 5})  # the pilot after two pairs: more than planned
    assert ran == [0, 1, 2, 3, 4] and done.planned_instances == 5 and last == [5]
    ran.clear()
    done, looks, last = run(6, {2: 1})  # never fewer than have run: it ends there, with its explain pass
    assert ran == [0, 1] and done.planned_instances == 2 and last == [2]
