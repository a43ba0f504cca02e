"""Baselines: creation, refusals, the rolling window, atomic writes, clear errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from perfci.judge.compare import compare_cases
from perfci.store.baseline_files import load_baseline, update_baselines
from perfci.store.case_inputs import load_cases
from perfci.util.errors import BadInput

from conftest import PERFCI, REPO, SOURCE_ENV, run_perfci
from factories import make_result, write_results


def test_update_creates_layout_and_keeps_provenance(tmp_path):
    results = [make_result(tps=1000 + i) for i in range(3)]
    [(path, added, kept)] = update_baselines(write_results(tmp_path / "r", results), root=tmp_path / "baselines")
    assert path == tmp_path / "baselines/local/mariadb-10.11/tiny/smoke/default.json"  # the server line
    assert (added, kept) == (3, 3)
    b = load_baseline(path)
    assert [s.result_id for s in b.samples] == [r.id for r in results]
    assert b.samples[0].server_version == "10.11.19-MariaDB" and b.case.server == "mariadb-10.11"
    assert b.samples[0].metrics["before.tps"] == 1000 and b.samples[0].scenario_hash == "sha256:aaaa"
    assert b.samples[0].harness_sha == "abc" and b.samples[0].forced == []
    assert b.values("after.tps") == [1000, 1001, 1002]
    # the same results again: nothing added
    assert update_baselines(write_results(tmp_path / "r", results), root=tmp_path / "baselines")[0][1] == 0


def test_rolling_window_keeps_the_newest(tmp_path):
    results = [make_result(tps=1000 + i) for i in range(5)]
    [(path, _, kept)] = update_baselines(write_results(tmp_path / "r", results), root=tmp_path / "b", window=3)
    assert kept == 3 and load_baseline(path).values("before.tps") == [1002, 1003, 1004]


@pytest.mark.parametrize("bad, why", [
    (dict(phases=("before",)), "partial run: phases without metrics: after"),
    (dict(scenario_hash="sha256:bbbb"), "scenario hash sha256:bbbb differs"),
    (dict(cpus=64), "is not the baseline's"),
])
def test_refusals_name_the_reason_and_write_nothing(tmp_path, bad, why):
    root = tmp_path / "b"
    [(path, _, _)] = update_baselines(write_results(tmp_path / "r", [make_result()]), root=root)
    before = path.read_text()
    with pytest.raises(BadInput, match=why):
        update_baselines(write_results(tmp_path / "r2", [make_result(**bad)]), root=root)
    assert path.read_text() == before


def test_force_accepts_and_records_why(tmp_path):
    root = tmp_path / "b"
    update_baselines(write_results(tmp_path / "r", [make_result()]), root=root)
    [(path, added, _)] = update_baselines(write_results(tmp_path / "r2", [make_result(scenario_hash="sha256:cccc")]),
                                root=root, force=True)
    sample = load_baseline(path).samples[-1]
    assert added == 1 and "scenario hash" in sample.forced[0]


def test_runner_class_mismatch_is_refused_for_an_explicit_baseline(tmp_path):
    target = tmp_path / "b.json"
    update_baselines(write_results(tmp_path / "r", [make_result()]), path=target)
    with pytest.raises(BadInput, match="runner class 'epyc' is not the baseline's 'local'"):
        update_baselines(write_results(tmp_path / "r2", [make_result(runner_class="epyc")]), path=target)


def test_corrupt_baseline_is_a_clear_error_naming_the_file(tmp_path, perfci_here):
    bad = tmp_path / "default.json"
    bad.write_text('{"schema": "perfci.baseline/1", "samples": [')
    with pytest.raises(BadInput, match=rf"{bad}: corrupt baseline \(not JSON"):
        load_baseline(bad)
    bad.write_text('{"schema": "perfci.baseline/2", "case": {"runner_class": "local"}}')
    with pytest.raises(BadInput, match=r"corrupt baseline\): field case.server: required but missing"):
        load_baseline(bad)
    proc = perfci_here("compare", "--baseline", str(bad), str(write_results(tmp_path / "r", [make_result()])[0][0]))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(bad) in proc.stderr


def test_compare_flags_a_regression_with_movers(tmp_path):
    root = tmp_path / "b"
    update_baselines(write_results(tmp_path / "r", [make_result(tps=1000 + 7 * i) for i in range(5)]), root=root)
    slow = make_result(tps=700, splits=1.5)
    [comp] = compare_cases(load_cases([slow], baseline_root=root))
    verdicts = {row.key: row.verdict.verdict for row in comp.rows}
    assert verdicts["before.tps"] == "regression" and verdicts["before.index_page_splits_per_txn"] == "regression"
    assert verdicts["before.compress_failures_per_txn"] == "unchanged"
    movers = dict((name, (b, c)) for name, b, c in next(r for r in comp.rows if r.key == "before.tps").movers)
    assert "innodb_metrics.index_page_splits" in movers
    [fresh] = compare_cases(load_cases([make_result()], baseline_root=tmp_path / "none"))
    assert {row.verdict.verdict for row in fresh.rows} == {"no-baseline"}


def test_a_baseline_pinned_on_another_runner_class_is_said_not_silently_ignored(tmp_path):
    """Baselines pinned from local runs (class `local`) and a nightly on `epyc-nvme`: the
    night is not judged against them, and its report says why (the mismatch the docs'
    'pin from local runs' advice used to hide)."""
    root = tmp_path / "b"
    update_baselines(write_results(tmp_path / "r", [make_result(tps=1000 + 7 * i) for i in range(3)]), root=root)
    [night] = compare_cases(load_cases([make_result(runner_class="epyc-nvme")], baseline_root=root))
    assert {row.verdict.verdict for row in night.rows} == {"no-baseline"}
    [warning] = night.warnings
    assert "no baseline of runner class `epyc-nvme`" in warning and "pinned on runner class `local`" in warning
    assert "perfci run --runner-class epyc-nvme" in warning
    [local] = compare_cases(load_cases([make_result()], baseline_root=root))
    assert local.warnings == [] and local.baseline is not None
    [elsewhere] = compare_cases(load_cases([make_result(runner_class="epyc-nvme")], baseline_root=tmp_path / "none"))
    assert elsewhere.warnings == []


# strace(1) sends SIGKILL at the entry of a chosen syscall: the kill lands at the same point
# of the write every time, however busy the host (a test that raced a polling loop against
# the write landed mid-write in only 1 of 4 tries on a loaded CI host).
KILL_AT = {  # write_atomic's syscalls, in order: write the temp file, fsync it, rename, fsync the dir
    "before the temp file is synced": ("fsync", 1, "old"),
    "at the rename": ("rename", 1, "old"),
    "after the rename, before the directory is synced": ("fsync", 2, "new"),
}


@pytest.mark.slow
@pytest.mark.parametrize("moment", list(KILL_AT))
def test_kill_during_update_never_leaves_a_broken_baseline(tmp_path, moment):
    """kill -9 a real `perfci baseline update` at a fixed point of its write: before the
    rename the old baseline stays byte for byte, after it the whole new version is there;
    the next update sweeps the temp file the killed one left."""
    syscall, nth, expected = KILL_AT[moment]
    results = write_results(tmp_path / "r", [make_result(tps=900 + i, intervals=2000) for i in range(6)])
    target = tmp_path / "b.json"
    update_baselines(results[:3], path=target, force=True)
    before = target.read_bytes()
    files = [str(p) for p, _ in results[3:]]
    proc = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
                           "-e", f"inject={syscall}:signal=KILL:when={nth}",
                           *PERFCI, "baseline", "update", "--baseline", str(target), "--window", "1000", "--force",
                           *files], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **SOURCE_ENV, "PYTHONDONTWRITEBYTECODE": "1"})  # no .pyc renames
    assert proc.returncode == -signal.SIGKILL or proc.returncode == 128 + signal.SIGKILL, proc.stderr
    if expected == "old":
        assert target.read_bytes() == before
        [leftover] = tmp_path.glob(".b.json.*.tmp")  # the killed write's temp file, whole or not
        assert leftover.stat().st_size > 0
    else:
        assert len(load_baseline(target).samples) == 6 and not list(tmp_path.glob(".b.json.*.tmp"))
    # a later update succeeds and sweeps the temp files the killed one left behind
    update_baselines(results[3:], path=target, force=True)
    assert len(load_baseline(target).samples) == 6 and not list(tmp_path.glob(".b.json.*.tmp"))


def test_skipped_cases_are_reported_not_judged_and_never_enter_a_baseline(tmp_path):
    ran = make_result(case="cx_full/change_buffering=none")
    skipped = make_result(status="skipped", case="cx_full/change_buffering=all").model_copy(
        update={"skip_reason": "innodb_change_buffering=all is not supported: gone"})
    written = update_baselines([(tmp_path / "a.json", ran), (tmp_path / "b.json", skipped)], root=tmp_path / "b")
    assert [p.name for p, _, _ in written] == ["cx_full__change_buffering=none.json"]
    comps = {c.results[0].case: c for c in compare_cases(load_cases([ran, skipped], baseline_root=tmp_path / "b"))}
    assert comps["cx_full/change_buffering=all"].skipped == "innodb_change_buffering=all is not supported: gone"
    assert comps["cx_full/change_buffering=all"].rows == [] and not comps["cx_full/change_buffering=all"].regressions
    assert comps["cx_full/change_buffering=none"].skipped is None and comps["cx_full/change_buffering=none"].rows
    from perfci.report.markdown import comparison_markdown
    text = comparison_markdown(list(comps.values()), 0.995)
    assert "**Skipped:** innodb_change_buffering=all is not supported: gone" in text


def test_a_version_1_baseline_is_upgraded_on_load(tmp_path):
    old = tmp_path / "default.json"
    old.write_text(json.dumps({
        "schema": "perfci.baseline/1", "runner_class": "local", "server": {"flavor": "mariadb", "version": "10.11.19"},
        "scenario": {"name": "tiny", "profile": "smoke", "case": "default", "hash": "sha256:aaaa"},
        "host": {"cpu_model": "Test CPU", "cpus": 2, "memory_gib": 24}, "window": 10,
        "samples": [{"result_id": "r1", "date": "2026-11-01", "harness_sha": "abc", "scenario_hash": "sha256:aaaa",
                     "host": {"cpu_model": "Test CPU", "cpus": 2, "memory_gib": 24}, "metrics": {"before.tps": 1000.0}}]}))
    b = load_baseline(old)
    assert b.case.server == "mariadb-10.11.19" and b.scenario_hash == "sha256:aaaa" and b.values("before.tps") == [1000.0]
    [(path, added, kept)] = update_baselines(write_results(tmp_path / "r", [make_result()]), path=old)
    assert (added, kept) == (1, 2) and json.loads(old.read_text())["schema"] == "perfci.baseline/2"


def test_a_hand_edited_result_with_an_unknown_status_is_one_line(tmp_path, perfci_here):
    path = tmp_path / "r.json"
    from factories import edited
    path.write_text(json.dumps(edited(make_result(), status="failed")))
    proc = perfci_here("baseline", "update", str(path), "--baseline-dir", str(tmp_path / "b"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{path} (corrupt result): field status:" in proc.stderr and not (tmp_path / "b").exists()


def test_counters_that_did_not_move_beyond_their_noise_are_not_listed_as_moved():
    from perfci.judge.compare import moved_counters
    base = [{"before.splits": 1.0, "before.noisy": v, "before.reads": 100.0, "before.flat": 1.0}
            for v in (90.0, 110.0, 95.0, 105.0)]
    current = [{"before.splits": 1.6, "before.noisy": v, "before.reads": 101.0, "before.flat": 1.0}
               for v in (97.0, 117.0, 102.0, 112.0)]   # noisy: +7 % on a counter that varies 9 %
    moved = moved_counters("before", current, base)
    assert [name for name, _, _ in moved] == ["splits"]   # reads +1 %: below 2 %; flat: 1 -> 1
    # with one sample a side there is no spread to judge by: the 2 % minimum alone
    one = moved_counters("before", current[:1], base[:1])
    assert [name for name, _, _ in one] == ["splits", "noisy"]


@pytest.mark.slow
def test_a_baseline_pinned_for_a_class_no_workflow_runs_says_so(tmp_path):
    """#57's runner-class trap: samples of a laptop (`local`) pinned in a project whose
    nightly runs `epyc-nvme` are never read there; the pin says it, in one warning."""
    project = tmp_path / "team"
    (project / "scenarios").mkdir(parents=True)
    flows = project / ".github" / "workflows"
    flows.mkdir(parents=True)
    (flows / "nightly.yml").write_text("jobs:\n  perf:\n    with:\n      runner-class: epyc-nvme  #@team\n")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(make_result().dump()))  # runner class `local`
    proc = run_perfci("baseline", "update", str(path), cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("warning: these samples are of runner class 'local'; this project's workflows run "
                                  "'epyc-nvme' (nightly.yml): a baseline counts only on the class"), proc.stderr
    (flows / "nightly.yml").write_text("jobs:\n  perf:\n    with:\n      runner-class: local\n")
    assert run_perfci("baseline", "update", str(path), cwd=project).stderr == ""
