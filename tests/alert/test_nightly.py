"""The nightly loop's pieces without GitHub: who may accept a regression, which
changes in a history persist, history baselines (exclusions, resets, nights held
out) and the commands' input errors."""

from __future__ import annotations

import numpy as np
import pytest

from perfci.alert.nightly import acceptance
from perfci.judge.changes import persisting_changes
from perfci.judge.compare import compare_cases
from perfci.model.baseline import baseline_from_history
from perfci.model.history import HistoryRecord, NightVerdict
from perfci.model.identity import CaseIdentity
from perfci.model.metrics import MetricSpec
from perfci.store.case_inputs import load_cases
from perfci.store.history_files import append, case_history, exclude, reset

from conftest import run_perfci
from factories import make_result

TPS = MetricSpec("tps", "higher", 0.05)


def series(values: list[float]) -> list[HistoryRecord]:
    return [HistoryRecord(result_id=f"r{i:02d}", date=f"2026-10-{i + 1:02d}", scenario_hash="sha256:aaaa",
                          metrics={"after.tps": v}) for i, v in enumerate(values)]


def noisy(n: int, level: float, seed: int) -> list[float]:
    return list(np.random.default_rng(seed).normal(level, level * 0.01, n))


def test_a_label_or_a_writers_command_accepts_and_anyone_elses_does_not(tmp_path, monkeypatch):
    """Through the real gh against the fake API: a read-only collaborator's command does
    not count, nor a label a triager added (removed once: the triager's label reset the
    baseline)."""
    from perfci.alert.github import GitHub

    from fake_github import FakeGitHub
    labelled = {"labels": [{"name": "perf-expected"}]}
    by = lambda who, assoc, body="/perfci accept": {"user": {"login": who}, "author_association": assoc, "body": body}  # noqa: E731
    with FakeGitHub(tmp_path) as fake:
        for key, value in fake.env(tmp_path / "gh").items():
            monkeypatch.setenv(key, value)
        fake.permissions.update({"dba": "write", "reader": "read"})
        gh = GitHub("perf/ci")
        fake.permissions.update({"triager": "triage"})
        fake.issues[5] = {"number": 5, "title": "t", "body": "", "state": "open", "labels": []}
        fake.add_label(5, "perf-expected", by="triager")
        assert gh.labelled_by(5, "perf-expected") == "triager"
        assert acceptance(labelled, [], gh.can_write, lambda: "triager") is None  # triage access adds labels
        fake.add_label(5, "perf-expected", by="dba")
        assert acceptance(labelled, [], gh.can_write, lambda: gh.labelled_by(5, "perf-expected")) == \
            "label perf-expected by @dba"
        nobody = lambda: None  # noqa: E731
        assert acceptance({"labels": []}, [by("dba", "COLLABORATOR")], gh.can_write, nobody) == "/perfci accept by @dba"
        assert acceptance({"labels": []}, [by("reader", "COLLABORATOR")], gh.can_write, nobody) is None  # read only
        assert acceptance({"labels": []}, [by("passer-by", "NONE"), by("fork", "CONTRIBUTOR")], gh.can_write,
                          nobody) is None
        assert acceptance({"labels": []}, [by("dba", "OWNER", "we could /perfci accept this later")], gh.can_write,
                          nobody) is None
        assert ("GET", "/api/v3/repos/perf/ci/collaborators/reader/permission") in fake.requests


def test_a_step_persists_a_spike_and_a_recovery_do_not():
    step = noisy(14, 1000, 1) + noisy(6, 920, 2)
    [change] = persisting_changes(series(step), "after.tps", TPS)
    assert change.location.result_id == "r14" and -10 < change.change_pct < -6
    spike = noisy(20, 1000, 3)
    spike[9] = 700
    assert persisting_changes(series(spike), "after.tps", TPS) == []
    recovered = noisy(8, 1000, 4) + noisy(5, 800, 5) + noisy(7, 1000, 6)
    assert persisting_changes(series(recovered), "after.tps", TPS) == []
    assert persisting_changes(series(noisy(14, 1000, 7) + noisy(2, 900, 8)), "after.tps", TPS) == []  # 2 nights: not yet


def test_a_history_baseline_leaves_out_exclusions_regressed_nights_and_what_came_before_a_reset(tmp_path):
    runs = [make_result(tps=1000 + i) for i in range(6)]
    append(runs[:3], tmp_path)
    # the 4th night judged a regression (it stands), the 5th worse again after it (it stands too)
    append(runs[3:5], tmp_path, verdicts={runs[3].id: NightVerdict(worse=("before.tps",), regressions=("before.tps",)),
                                          runs[4].id: NightVerdict(worse=("before.tps",))})
    exclude(tmp_path, runs[1].id, "noisy neighbour")
    hist = case_history(tmp_path, CaseIdentity.of(runs[5]))
    baseline = baseline_from_history(hist, runs[5])
    assert baseline is not None and [s.result_id for s in baseline.samples] == [runs[0].id, runs[2].id]
    assert [r.standing for r in hist.records[3:5]] == [["before.tps"], ["before.tps"]]
    assert hist.regressed_streak("before.tps", runs[5].scenario.hash) == [runs[3].id, runs[4].id]
    reset(tmp_path, hist.path, runs[3].id, "accepted")
    hist = case_history(tmp_path, CaseIdentity.of(runs[5]))
    baseline = baseline_from_history(hist, runs[5])
    assert [s.result_id for s in baseline.samples] == [runs[3].id, runs[4].id]  # accepted by the reset
    assert hist.regressed_streak("before.tps", runs[5].scenario.hash) == []


def test_a_night_only_worse_without_a_standing_regression_before_it_joins_the_baseline(tmp_path):
    """Inconclusively worse is noise as often as not where the tolerance is below the
    noise: leaving such nights out cuts the baseline's lower tail (the ratchet)."""
    runs = [make_result(tps=1000 + i) for i in range(5)]
    append(runs[:2], tmp_path)
    append(runs[2:4], tmp_path, verdicts={r.id: NightVerdict(worse=("before.tps",)) for r in runs[2:4]})
    hist = case_history(tmp_path, CaseIdentity.of(runs[4]))
    baseline = baseline_from_history(hist, runs[4])
    assert baseline is not None and [s.result_id for s in baseline.samples] == [r.id for r in runs[:4]]
    assert [r.standing for r in hist.records] == [[]] * 4
    assert hist.regressed_streak("before.tps", runs[4].scenario.hash) == [runs[2].id, runs[3].id]  # still a streak


def test_a_pinned_baseline_file_wins_over_the_history(tmp_path):
    from perfci.store.baseline_files import update_baselines

    from factories import write_results
    history, pinned = tmp_path / "history", tmp_path / "baselines"
    append([make_result(tps=500) for _ in range(3)], history)
    current = make_result(tps=1000)
    [comp] = compare_cases(load_cases([current], history_root=history))
    assert comp.baseline_file == case_history(history, comp.identity).path and len(comp.baseline.samples) == 3
    assert any(r.key == "before.tps" and r.verdict.verdict == "improvement" for r in comp.rows)
    update_baselines(write_results(tmp_path / "r", [make_result(tps=1000) for _ in range(3)]), root=pinned)
    [comp] = compare_cases(load_cases([current], baseline_root=pinned, history_root=history))
    assert comp.baseline_file.suffix == ".json" and not comp.provenance


def test_excluding_an_unknown_result_is_a_one_line_input_error(tmp_path, perfci_here):
    append([make_result()], tmp_path)
    proc = perfci_here("history", "exclude", "no-such-run", "--reason", "x", "--history", str(tmp_path))
    assert proc.returncode == 2 and "no history record with result id 'no-such-run'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_history_baseline_pools_only_the_judged_runs_host_and_says_what_it_left_out(tmp_path):
    """HostSignature's policy: samples of another host signature never pool into a baseline."""
    two_cores, eight_cores = [make_result(tps=1000, cpus=2) for _ in range(3)], [make_result(tps=4000, cpus=8)]
    append(two_cores + eight_cores, tmp_path)
    [comp] = compare_cases(load_cases([make_result(tps=1000, cpus=2)], history_root=tmp_path))
    assert [s.result_id for s in comp.baseline.samples] == [r.id for r in two_cores]
    assert any("left out 1 sample(s) from another host" in line for line in comp.provenance)
    [comp] = compare_cases(load_cases([make_result(tps=4000, cpus=8)], history_root=tmp_path))
    assert [s.result_id for s in comp.baseline.samples] == [eight_cores[0].id]


def test_a_night_reads_each_case_history_once(tmp_path, monkeypatch):
    """compare, issues, append and change points share one Histories: each case file and
    the annotations are read once a night, and change points see tonight's record."""
    from perfci.alert.nightly import NightOptions, run_night
    from perfci.store import history_files

    history = tmp_path / "history"
    append([make_result(tps=1000) for _ in range(4)], history)
    reads: list[str] = []
    real_read = history_files.read_history
    monkeypatch.setattr(history_files, "read_history", lambda path: reads.append(path.name) or real_read(path))
    tonight = make_result(tps=500)
    night = run_night([tonight], NightOptions(history_root=history, min_nights=1), dry_run_dir=tmp_path / "issues")
    actions = night.actions
    assert any(a.startswith("wrote ") for a in actions) and any(a.endswith(": +1") for a in actions)
    assert len(reads) == 1, reads
    [path] = history_files.case_files(history)
    assert [r.result_id for r in real_read(path)][-1] == tonight.id
    # tps halved against four nights: a judged regression, and it stands
    assert night.regression_stands and "before.tps" in night.standing[tonight.id]


@pytest.mark.slow
def test_nightly_exits_one_when_a_regression_stands_and_zero_on_a_clean_night(tmp_path):
    from factories import write_results
    history = tmp_path / "history"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    [(clean, _)] = write_results(tmp_path / "clean", [make_result(tps=1001)])
    proc = run_perfci("nightly", str(clean), "--history", str(history), "--dry-run", "--out", str(tmp_path / "i1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "regression stands" not in proc.stdout
    [(slow, result)] = write_results(tmp_path / "slow", [make_result(tps=500)])
    proc = run_perfci("nightly", str(slow), "--history", str(history), "--dry-run", "--out", str(tmp_path / "i2"),
                      "--min-nights", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"regression stands: {result.id}: " in proc.stdout and "before.tps" in proc.stdout


@pytest.mark.slow
def test_a_night_that_tells_nobody_exits_zero_and_its_summary_says_what_is_pending(tmp_path):
    """#57: a regression on its first of two nights opens nothing: exit 0, a line saying
    so, and the "tonight" summary's row says pending and why; the second night writes the
    issue: exit 1, the row says so. (Removed once: the first night exited 1.)"""
    from factories import write_results
    history, summary = tmp_path / "history", tmp_path / "summary.md"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    for night, (code, status) in enumerate(((0, "🟡 pending"), (1, "🔴 written (dry run)"))):
        [(slow, _)] = write_results(tmp_path / f"slow{night}", [make_result(tps=500)])
        summary.write_text("")
        proc = run_perfci("nightly", str(slow), "--history", str(history), "--dry-run", "--out",
                          str(tmp_path / f"i{night}"), "--min-nights", "2", "--summary", str(summary),
                          "--run-url", "https://github.example/o/r/actions/runs/7")
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert ("nothing opened or commented tonight (pending: see above)" in proc.stdout) == (code == 0)
        text = summary.read_text()
        [row] = [line for line in text.splitlines() if line.startswith("| `")]
        assert f"| {status} |" in row and "`before.tps`" in row, text
        assert text.startswith("## perfci tonight\n\n**Nothing opened or commented tonight.** 1 pending" if code == 0
                               else "## perfci tonight\n\n**1 case told of a regression tonight.**"), text
        if code == 0:
            assert "regressed on 1 of the 2 consecutive nights an issue needs" in row


def test_an_unconfirmed_threshold_issue_says_its_level_and_a_marginal_one_waits_for_its_second_road(tmp_path):
    """No A/B behind it: -50 % against ten nights opens its issue, which says the level
    it was judged at; -12 % is a regression at 99.5 % (p ~1e-4) but not at the
    thresholds' share of the default budget over 19 judged metrics (3.5e-5 each): it
    stands in the history and waits for the reference A/B or its change point."""
    from perfci.alert.nightly import NightOptions, run_night
    for tps, opens in ((500, True), (880, False)):
        history, issues = tmp_path / f"history-{tps}", tmp_path / f"issues-{tps}"
        append([make_result(tps=1000 + 10 * (i % 3)) for i in range(10)], history)
        tonight = make_result(tps=tps)
        night = run_night([tonight], NightOptions(history_root=history, min_nights=1), dry_run_dir=issues)
        assert night.regression_stands and "before.tps" in night.standing[tonight.id]
        written = list(issues.glob("*.md"))
        if opens:
            [issue] = written
            assert ("- level: judged at 0.067% per case and night (0.0035% each of 19 metrics): thresholds hold 20% "
                    "of a false-issue budget of 1 a month over 10 cases and 30 nights") in issue.read_text()
        else:
            assert not written
            [pending] = [a for a in night.actions if a.startswith("pending: ")]
            assert "regressed (smallest p 0.00011), above the 3.5e-05 per metric" in pending


def test_by_default_a_regression_no_ab_confirmed_opens_its_issue_on_its_third_night(tmp_path):
    """The nightly's default --min-nights (judge/budget.DEFAULT_MIN_NIGHTS, 3): a threshold
    regression with no A/B behind it, however large, is pending on its first two nights
    and opens its issue on the third. Two nights let a slow hour's tail through the t
    test: 14 of 200 simulated case-months against the thresholds' 2 % share
    (benchmarks/results/month-simulation-20261127-0230da9.md)."""
    from perfci.alert.nightly import NightOptions, run_night
    history, issues = tmp_path / "history", tmp_path / "issues"
    append([make_result(tps=1000 + 10 * (i % 3)) for i in range(10)], history)
    said = [run_night([make_result(tps=500)], NightOptions(history_root=history), dry_run_dir=issues).actions
            for _ in range(3)]
    for night, actions in enumerate(said[:2], 1):
        assert any(a.startswith("pending: before.tps") and f"regressed on {night} of the 3 consecutive nights" in a
                   for a in actions), actions
    [issue] = issues.glob("*.md")
    assert f"wrote {issue}" in said[2] and "before.tps" in issue.read_text()
