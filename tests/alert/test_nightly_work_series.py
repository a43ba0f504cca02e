"""The nightly's counted series (`perfci run --measure work`): a case's instructions per
transaction, kept apart from its timed series and judged on that alone, through the
real nightly loop (nightly.run_night: thresholds against the history, history append,
change points; issue bodies written to files). The nights' counts spread 0.02 %
(the microbench reads' pair sd, benchmarks/results/work/spread-report-20261128.md);
their times, taken under the counter, spread wildly and must never open anything."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from perfci.alert.nightly import NightOptions, run_night
from perfci.model.identity import CaseIdentity
from perfci.model.metrics import WORK_METRIC, judged_keys
from perfci.model.result import Result
from perfci.report.markdown import summary_markdown

from factories import make_result

INSTRUCTIONS = 1_000_000.0
COUNTED_CV = 0.0002


def counted_night(n: int, rng: np.random.Generator, step: float = 1.0) -> Result:
    """Night n's counted run: instructions per transaction near INSTRUCTIONS (times `step`),
    its times those of a server under callgrind (a few % of native, anything)."""
    data = make_result(tps=1000.0).dump()
    data["id"] = f"counted-night{n:02d}"
    data["finished_at"] = f"2026-10-{n:02d}T03:00:00+00:00"
    data["measure"] = "work"
    data["work"] = "instructions counted by callgrind inside do_command(THD*, bool)"
    for body in data["phases"].values():
        slow = float(rng.uniform(0.02, 0.2))  # under the counter: times say nothing
        m = body["metrics"]
        for key in ("tps", "qps", "qps_write"):
            m[key] *= slow
        for key in ("latency_ms_avg", "latency_ms_p95"):
            m[key] /= slow
        bursts = [INSTRUCTIONS * step * math.exp(rng.normal(0, COUNTED_CV)) for _ in range(3)]
        m[WORK_METRIC] = round(sum(bursts) / 3, 1)
        body["counted_bursts"] = [round(b, 1) for b in bursts]
    return Result.model_validate(data)


def test_a_counted_run_is_a_series_of_its_own_with_its_own_issue_fingerprint():
    rng = np.random.default_rng(1)
    timed, counted = make_result(), counted_night(1, rng)
    root = Path("/h")
    assert CaseIdentity.of(timed).path(root, ".jsonl") == root / "local/mariadb-10.11/tiny/smoke/default.jsonl"
    assert CaseIdentity.of(counted).path(root, ".jsonl") == root / "local/mariadb-10.11/tiny/smoke.work/default.jsonl"
    assert CaseIdentity.of(timed).key() != CaseIdentity.of(counted).key()
    assert "counted work" in CaseIdentity.of(counted).label and "counted" not in CaseIdentity.of(timed).label


def test_a_counted_run_is_judged_on_its_instructions_alone_whatever_its_times_or_the_scenario_list():
    counted = counted_night(1, np.random.default_rng(2))
    assert [key for key, _ in judged_keys(counted, None)] == [f"before.{WORK_METRIC}", f"after.{WORK_METRIC}"]
    timed_keys = [key for key, _ in judged_keys(make_result(), None)]
    assert "before.tps" in timed_keys and f"before.{WORK_METRIC}" not in timed_keys


def test_a_counted_runs_summary_leads_with_its_instructions_and_hides_its_times():
    text = summary_markdown(counted_night(1, np.random.default_rng(3)))
    assert "measured: **work**, instructions counted by callgrind" in text
    assert "| instructions / txn |" in text and "counted bursts CV (n bursts)" in text
    assert "| tps |" not in text and "latency" not in text


def nights(tmp_path: Path, step_from: int, step: float, count: int = 16, seed: int = 7) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    root = tmp_path / "history"
    root.mkdir()
    return [run_night([counted_night(n, rng, step if n >= step_from else 1.0)], NightOptions(history_root=root),
                      None, tmp_path / "issues").actions for n in range(1, count + 1)]


def test_a_one_and_a_half_percent_step_in_counted_work_is_called_within_three_nights_and_noise_never(tmp_path):
    """12 nights, then a +1.5 % step (a 1 % code regression is its tolerance): the
    nightly calls it in the counted series by the third night of the step; the wild
    times of the counted runs open nothing before it."""
    actions = nights(tmp_path, step_from=13, step=1.015)
    written = [(n, a) for n, lines in enumerate(actions, 1) for a in lines if a.startswith("wrote ")]
    assert written, actions
    first = written[0][0]
    assert 13 <= first <= 15, written
    issue = Path(written[0][1].removeprefix("wrote ")).read_text()
    assert WORK_METRIC in issue and "tiny/smoke.work/default" in issue, issue[:1500]
    assert not any(key in issue.split("\n", 1)[0] for key in ("tps", "latency")), issue[:300]


def test_counted_nights_without_a_step_open_nothing(tmp_path):
    actions = nights(tmp_path, step_from=99, step=1.0, count=20, seed=11)
    assert not [a for lines in actions for a in lines if a.startswith("wrote ")], actions


def test_the_dashboard_draws_a_counted_series_instructions_and_not_its_times(tmp_path):
    from perfci.report.dashboard_site import judged
    from perfci.store.history_files import case_files, read_history
    nights(tmp_path, step_from=99, step=1.0, count=3)
    [series] = case_files(tmp_path / "history")
    records = read_history(series)
    assert {r.measure for r in records} == {"work"}
    assert sorted(key for key, _ in judged(records)) == [f"after.{WORK_METRIC}", f"before.{WORK_METRIC}"]


def test_a_counted_phase_whose_count_follows_timing_is_kept_but_not_judged():
    """Five real counted nights (benchmarks/results/soak/2026-11-29-75a0fcb93245-work): one
    client reading repeated to 0.15 %, several clients writing moved up to 33x night to
    night. A counted night judges only the phases of one client that wrote nothing; the
    others stay in the result and the history, and the comparison says which and why."""
    from perfci.judge.compare import compare_cases
    from perfci.store.case_inputs import load_cases
    data = counted_night(1, np.random.default_rng(4)).dump()
    data["phases"]["before"]["threads"] = 4                                       # several clients
    data["phases"]["after"]["counters"]["global_status"]["Com_update"] = 3000     # one client, writing
    data["phases"]["read"] = {**data["phases"]["after"], "counters": {"global_status": {}}}  # one client reading
    night = Result.model_validate(data)
    assert [key for key, _ in judged_keys(night, None)] == [f"read.{WORK_METRIC}"]
    [comp] = compare_cases(load_cases([night]))
    assert [r.key for r in comp.rows] == [f"read.{WORK_METRIC}"]
    assert any(w.startswith("counted, not judged: before, after (several clients or writes") for w in comp.warnings)
