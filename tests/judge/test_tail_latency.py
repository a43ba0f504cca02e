"""Tail latencies (p99, p99.9 from sysbench's histogram): recorded by every run and burst,
judged where a scenario lists them; the A/B's default set leaves a burst's tail out."""

from __future__ import annotations

from perfci.judge.burst_verdicts import judged_specs
from perfci.judge.compare import compare_cases
from perfci.model.metrics import AB_DEFAULT_COMPARED, DEFAULT_COMPARED, judged_keys
from perfci.model.scenario import CompareSpec
from perfci.model.verdicts import Direction, Outcome
from perfci.sessions.interleave import burst_metrics
from perfci.store.baseline_files import update_baselines
from perfci.store.case_inputs import load_cases

from factories import make_result, write_results

REPORT = {"events": 2000, "tps": 500.0, "qps": 5000.0, "latency_ms_avg": 2.0, "latency_ms_p95": 3.1,
          "latency_ms_p99": 7.5}


def test_a_burst_carries_its_tails_and_the_ab_judges_them_only_when_listed():
    cmp = {"compress_ops": 0, "compress_ops_ok": 0, "uncompress_ops": 0}
    metrics = burst_metrics({"innodb_metrics": {}, "innodb_cmp": cmp, "global_status": {}}, REPORT)
    assert metrics["latency_ms_p99"] == 7.5 and metrics["latency_ms_p95"] == 3.1
    table = {f"p.{k}": [] for k in metrics}
    default = set(judged_specs(table, []))
    assert {"p.tps", "p.qps", "p.latency_ms_avg"} <= default and not any("latency_ms_p" in k for k in default)
    assert "latency_ms_p95" in DEFAULT_COMPARED and "latency_ms_p95" not in AB_DEFAULT_COMPARED
    listed = judged_specs(table, [CompareSpec(metric="tps"), CompareSpec(metric="latency_ms_p99", tolerance=0.2)])
    assert set(listed) == {"p.tps", "p.latency_ms_p99"}
    assert listed["p.latency_ms_p99"].direction == Direction.LOWER and listed["p.latency_ms_p99"].tolerance == 0.2


def with_tail(result, p99: float):
    data = result.dump()
    for phase in data["phases"].values():
        phase["metrics"]["latency_ms_p99"] = p99
    return type(result).model_validate(data)


def test_a_run_s_p99_is_judged_against_its_baseline_when_the_scenario_lists_it(tmp_path):
    root = tmp_path / "b"
    update_baselines(write_results(tmp_path / "r", [with_tail(make_result(tps=1000 + i), 8.0 + 0.05 * i)
                                                    for i in range(5)]), root=root)
    slow_tail = with_tail(make_result(tps=1002), 12.0)  # the same throughput, a tail 50 % longer
    listed = [CompareSpec(metric="tps"), CompareSpec(metric="latency_ms_p99")]
    assert {k for k, _ in judged_keys(slow_tail, listed)} >= {"before.latency_ms_p99", "after.latency_ms_p99"}
    assert not any(k.endswith("p99") for k, _ in judged_keys(slow_tail, None))  # not by default
    data = slow_tail.dump()
    data["scenario"]["resolved"]["compare"] = [c.model_dump(exclude_none=True) for c in listed]
    [comp] = compare_cases(load_cases([type(slow_tail).model_validate(data)], baseline_root=root))
    verdicts = {r.key: r.verdict.verdict for r in comp.rows}
    assert verdicts["before.latency_ms_p99"] == Outcome.REGRESSION and verdicts["before.tps"] == Outcome.UNCHANGED
