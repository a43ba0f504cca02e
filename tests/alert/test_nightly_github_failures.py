"""Finding 6 of the third hardening round: a night whose GitHub calls fail keeps its
history and says how to replay; rate limits and transient errors are tried again; bodies,
titles and labels stay within GitHub's limits. The real `gh` against the fake API, which
answers 502/429 as told and refuses what GitHub refuses (422)."""

from __future__ import annotations

import pytest

from perfci.alert.github import GITHUB_BODY_LIMIT, GitHub, capped_body, capped_label
from perfci.store.history_files import append, case_files, read_history

from conftest import run_perfci
from factories import make_result, write_results
from fake_github import FakeGitHub


def night(tmp_path, fake, results_dir, history):
    return run_perfci("nightly", str(results_dir), "--history", str(history), "--min-nights", "1",
                      env={**fake.env(tmp_path / "gh"), "PERFCI_GH_RETRY_DELAYS": "0.01,0.01,0.01"})


@pytest.mark.slow
def test_a_failing_api_keeps_the_night_in_the_history_and_a_rerun_replays_the_issues(tmp_path):
    history = tmp_path / "history"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    [(slow, result)] = write_results(tmp_path / "slow", [make_result(tps=500)])
    with FakeGitHub(tmp_path) as fake:
        fake.fail_next = [502, 429, 503, 502]  # the first call and its three retries
        proc = night(tmp_path, fake, slow, history)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "failed after 4 tries" in proc.stderr and "run the same `perfci nightly` command again" in proc.stderr
        [path] = case_files(history)
        assert [r.result_id for r in read_history(path)][-1] == result.id  # the night is kept
        assert fake.issues == {}
        # the replay: the history is not appended twice, the issue is opened
        proc = night(tmp_path, fake, slow, history)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert [r.result_id for r in read_history(path)].count(result.id) == 1
        [issue] = fake.issues.values()
        assert issue["title"].startswith("tiny before: throughput −")


@pytest.mark.slow
def test_rate_limits_and_a_bad_gateway_are_tried_again(tmp_path):
    history = tmp_path / "history"
    append([make_result(tps=1000 + i) for i in range(4)], history)
    [(slow, _)] = write_results(tmp_path / "slow", [make_result(tps=500)])
    with FakeGitHub(tmp_path) as fake:
        fake.fail_next = [429, 502, 403]  # 403 with GitHub's rate-limit message
        proc = night(tmp_path, fake, slow, history)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert len(fake.issues) == 1
        fake.fail_next = [404]  # not transient: no retry
        proc = night(tmp_path, fake, slow, history)
        assert proc.returncode == 3 and "tries" not in proc.stderr, proc.stderr


def test_bodies_titles_and_labels_are_capped_where_github_would_refuse_them(tmp_path, monkeypatch):
    assert capped_body("x" * 10) == "x" * 10
    long = capped_body("x" * 100_000)
    assert len(long) <= GITHUB_BODY_LIMIT and long.rstrip().endswith("the full text is in the run's artifacts)")
    linked = capped_body("x" * 100_000, "https://github.example/o/r/actions/runs/9")
    assert len(linked) <= GITHUB_BODY_LIMIT and linked.rstrip().endswith(
        "the full text is in [the run's artifacts](https://github.example/o/r/actions/runs/9))")
    name = "scenario:" + "a-very-long-scenario-name-" * 4
    label = capped_label(name)
    assert len(label) == 50 and label != capped_label(name + "x") and label.startswith("scenario:a-very")
    # through the real gh: the fake refuses (422) what GitHub refuses; the capped call goes through
    with FakeGitHub(tmp_path) as fake:
        for key, value in fake.env(tmp_path / "gh").items():
            monkeypatch.setenv(key, value)
        gh = GitHub("perf/ci", "https://github.example/perf/ci/actions/runs/9")
        issue = gh.create("t" * 300, "b" * 70_000, ["perf-regression", name])
        gh.comment(issue["number"], "c" * 70_000)
        stored = fake.issues[issue["number"]]
        assert len(stored["body"]) <= GITHUB_BODY_LIMIT and len(stored["title"]) <= 256
        assert stored["body"].rstrip().endswith("(https://github.example/perf/ci/actions/runs/9))")
        assert [lab["name"] for lab in stored["labels"]] == ["perf-regression", label]
        assert len(fake.comments[issue["number"]][0]["body"]) <= GITHUB_BODY_LIMIT


def test_a_write_whose_answer_was_lost_after_github_made_it_is_not_made_twice(tmp_path, monkeypatch):
    """GitHub made the issue (the comment), then the answer was a 502: the retry looks
    first and finds it; a replay of the night does not say the same again. (Removed once:
    two issues, two comments.)"""
    with FakeGitHub(tmp_path) as fake:
        for key, value in {**fake.env(tmp_path / "gh"), "PERFCI_GH_RETRY_DELAYS": "0.01,0.01"}.items():
            monkeypatch.setenv(key, value)
        gh = GitHub("perf/ci")
        fake.fail_after_next = [502]
        issue = gh.create("Perf regression: x", "body\n<!-- perfci-fingerprint: 0123456789abcdef -->", ["perf-regression"])
        assert list(fake.issues) == [issue["number"]]
        fake.fail_after_next = [502]
        gh.comment(issue["number"], "said once")
        gh.comment(issue["number"], "said once")  # the replay
        assert [c["body"] for c in fake.comments[issue["number"]]] == ["said once"]


@pytest.mark.slow
def test_a_clean_night_counts_once_whatever_replays_it(tmp_path, monkeypatch):
    """Clean nights are counted in one comment each night edits, naming the nights: the
    same night replayed adds nothing, the next night counts (removed once: with no run
    URL the second night looked the same), the last closes; one notification a streak."""
    from perfci.alert.regression_issues import clean_night
    with FakeGitHub(tmp_path) as fake:
        for key, value in fake.env(tmp_path / "gh").items():
            monkeypatch.setenv(key, value)
        gh = GitHub("perf/ci")
        issue = gh.create("Perf regression: x", "body", ["perf-regression"])
        said = [clean_night(gh, issue, "tps unchanged", 3, "", night) for night in ("n1", "n1", "n2")]
        assert said[0] == said[2].replace("2/3", "1/3") and "already counted" in said[1]
        [counting] = fake.comments[issue["number"]]
        assert counting["body"].splitlines()[-1] == (
            "Clean runs: 2 of 3 (tps unchanged); 1 more close this issue. Nights: `n1`, `n2`.")
        gh.comment(issue["number"], "<!-- perfci-regression -->\nStill regressed in `n3`")  # the streak breaks
        assert clean_night(gh, issue, "tps unchanged", 3, "", "n4").startswith(f"clean run 1/3 on #{issue['number']}")
        assert len(fake.comments[issue["number"]]) == 3  # a new count after the regression, the old one kept
        for night in ("n5", "n6"):
            clean_night(gh, issue, "tps unchanged", 3, "", night)
        assert fake.issues[issue["number"]]["state"] == "closed"
        assert fake.comments[issue["number"]][-1]["body"].splitlines()[-1].startswith("3 consecutive clean runs")
