"""A month of nightly runs through the real loop (nightly.run_night: triage, threshold
issues against the history, history append, change points), the history on a
`results` branch of a local bare git repository (cloned, appended and pushed each
night as the workflow's report and push jobs do) and the real `gh` talking to the
fake GitHub API. See simulated_month.py for the series."""

from __future__ import annotations

import pytest

from perfci.alert.github import GitHub
from perfci.alert.nightly import NightOptions, run_night
from perfci.alert.regression_issues import ACCEPT_LABEL, fingerprint
from perfci.model.identity import CaseIdentity
from perfci.store.history_files import case_history, read_annotations

from fake_github import FakeGitHub
from simulated_month import RECOVERY, SPIKE_NIGHT, STEP_NIGHT, UPGRADE_NIGHT, checkout, month, push, results_branch

pytestmark = pytest.mark.slow  # ~30 nights of gh calls and git pushes: too slow for the quick unit suite
ACCEPT_NIGHT = 22
CLOSE_AFTER = 3


def test_a_month_of_nights_opens_one_issue_per_problem_and_closes_them(tmp_path, monkeypatch):
    bare = results_branch(tmp_path)
    nights = month()
    step_case = CaseIdentity.of(nights[0][0])
    recovering_case = CaseIdentity.of(nights[0][1])
    step_fp, recovering_fp = fingerprint(step_case), fingerprint(recovering_case)  # one issue per case
    log: dict[int, list[str]] = {}
    with FakeGitHub(tmp_path) as fake:
        for key, value in fake.env(tmp_path / "gh").items():
            monkeypatch.setenv(key, value)
        gh = GitHub("perf/ci")

        def issues_with(fp: str) -> list[dict]:
            return [i for i in fake.issues.values() if f"perfci-fingerprint: {fp}" in i["body"]]

        for night, results in enumerate(nights, 1):
            if night == ACCEPT_NIGHT:  # a person triages the step as expected
                [step_issue] = issues_with(step_fp)
                fake.add_label(step_issue["number"], ACCEPT_LABEL)
            work = checkout(bare, tmp_path / f"night{night}")
            opts = NightOptions(history_root=work / "history", min_nights=2, close_after=CLOSE_AFTER,
                                run_url=f"https://ci.example/run/{night}")
            log[night] = run_night(results, opts, gh).actions
            push(work, f"night {night}")
            if night == STEP_NIGHT + 5:  # the step of night 15 has its issue by its 6th night, with its change point
                [step_issue] = issues_with(step_fp)
                texts = [step_issue["body"], *(c["body"] for c in fake.comments[step_issue["number"]])]
                assert any(f"perfci-change: {results[0].id.replace(str(night), '15')}" in t for t in texts), texts

    # the step: exactly one issue, opened by its 6th night (one run cannot call -8 % against ten:
    # the change point over the history does once the nights in a random order could show so
    # large a step less often than its level — the default false-issue budget's 0.1 % per case
    # and night shared over the case's 19 judged metrics, 5.3e-5 each: with 14 nights before,
    # 5 nights after are 11,628 orderings, not enough, 6 are 38,760), commented every night until accepted
    [step_issue] = issues_with(step_fp)
    opened = [n for n, lines in log.items() if any(a.startswith(f"opened #{step_issue['number']} ") for a in lines)]
    assert len(opened) == 1 and opened[0] <= STEP_NIGHT + 5, log
    assert "perfci-since: month-default-night15" in step_issue["body"]
    bodies = [c["body"] for c in fake.comments[step_issue["number"]]]
    assert sum(b.startswith("<!-- perfci-regression -->\nStill") for b in bodies) == ACCEPT_NIGHT - 1 - opened[0]
    # the patch upgrade (night 21) kept the issue opened on 10.11.19: its comments carry the new version's runs
    assert opened[0] < UPGRADE_NIGHT and any("night21" in b and "10.11.20" in b for b in bodies)
    # perf-expected -> reset at night 15, a comment, closed; no issue for it since
    assert step_issue["state"] == "closed" and "perfci-reset" in bodies[-1] and "`month-default-night15`" in bodies[-1]
    notes = read_annotations(tmp_path / f"night{len(nights)}" / "history")
    assert [(a.kind, a.result_id) for a in notes] == [("reset", "month-default-night15")]
    assert not any("after.tps" in a and "opened" in a for n in range(ACCEPT_NIGHT, len(nights) + 1) for a in log[n])
    # the one-night spike (the step's case, a week earlier): no issue that night, nor any night before the step
    assert any("pending: before.latency_ms_p95" in a for a in log[SPIKE_NIGHT])
    assert not any(a.startswith("opened") for n in range(1, STEP_NIGHT) for a in log[n] if str(step_issue["number"]) in a)
    # the recovering series: one issue, closed after K clean nights once it recovered
    [recovering_issue] = issues_with(recovering_fp)
    assert recovering_issue["state"] == "closed"
    closed = [n for n, lines in log.items() if any(a.startswith(f"closed #{recovering_issue['number']} (") for a in lines)]
    assert closed == [RECOVERY[1] + CLOSE_AFTER - 1], log
    # and nothing else was opened in the month (exactly one issue per problem)
    assert len(fake.issues) == 2, [i["title"] for i in fake.issues.values()]
    # the history on the branch holds every night, the upgrade under the same line's file
    final = case_history(tmp_path / f"night{len(nights)}" / "history", step_case)
    assert [r.result_id for r in final.records] == [n[0].id for n in nights]
    assert {r.server_version for r in final.records} == {"10.11.19-MariaDB", "10.11.20-MariaDB"}
    assert final.records[UPGRADE_NIGHT - 1].server_version == "10.11.20-MariaDB"
    # the step's first nights were worse (beyond tolerance, inconclusive alone: they joined the
    # baseline, and by night 19 four of them were in it, so that night no longer looked worse);
    # from the night its change point called it they were worse and stood, until the reset
    worse = {n for n, r in enumerate(final.records, 1) if "after.tps" in r.regressed}
    assert set(range(STEP_NIGHT, STEP_NIGHT + 4)) | set(range(opened[0], ACCEPT_NIGHT)) <= worse, sorted(worse)
    # (the night of the acceptance is written to the history before any GitHub call, so it
    # is judged under the baseline it had; the reset it brings counts from the next night)
    assert [n for n, r in enumerate(final.records, 1) if "after.tps" in r.standing] == \
        list(range(opened[0], ACCEPT_NIGHT + 1))
    assert final.records[ACCEPT_NIGHT - 1].judged_since != "month-default-night15"
    assert all(r.judged_since == "month-default-night15" and not r.regressed for r in final.records[ACCEPT_NIGHT:])
