"""Regression issues through the real `gh` against a local fake of GitHub's REST API."""

from __future__ import annotations

import json

import pytest

from perfci.alert.regression_issues import fingerprint
from perfci.model.identity import CaseIdentity
from perfci.store.baseline_files import update_baselines
from perfci.util.errors import BadInput

from conftest import run_perfci
from factories import make_result, write_results
from fake_github import FakeGitHub


@pytest.fixture
def setup(tmp_path):
    """A baseline of 5 runs, and helpers to write a candidate result and sync issues."""
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path, [make_result(tps=1000 + 5 * i) for i in range(5)]), root=root)

    def candidate(tps: float, version: str = "10.11.19") -> str:
        """A result whose `before.tps` alone moves (one issue: few API calls)."""
        [(path, result)] = write_results(tmp_path / "candidates", [make_result(version=version)])
        data = result.dump()
        data["phases"]["before"]["metrics"]["tps"] = tps  # type: ignore[index]
        path.write_text(json.dumps(data))
        return str(path)

    return root, candidate


def sync(fake, tmp_path, root, result_path, *extra, token="test-token"):
    return run_perfci("issues", "sync", result_path, "--baseline-dir", str(root), "--close-after", "2",
                      "--run-url", "https://ci.example/run/1", *extra, env=fake.env(tmp_path / "gh", token))


@pytest.mark.slow
def test_first_regression_opens_second_comments_clean_runs_close(setup, tmp_path):
    root, candidate = setup
    with FakeGitHub(tmp_path) as fake:
        proc = sync(fake, tmp_path, root, candidate(700))
        assert proc.returncode == 0, proc.stderr
        assert len(fake.issues) >= 1 and "opened #1" in proc.stdout
        tps_issue = next(i for i in fake.issues.values() if "before: throughput" in i["title"])
        labels = {lab["name"] for lab in tps_issue["labels"]}
        assert labels == {"perf-regression", "scenario:tiny", "server:mariadb-10.11"}  # the line, not the patch
        fp = fingerprint(CaseIdentity.of(make_result()))
        assert f"<!-- perfci-fingerprint: {fp} -->" in tps_issue["body"]
        assert len(fake.issues) == 1  # one issue for the case, whatever moved with tps
        assert "perfci run tiny --profile smoke" in tps_issue["body"] and "https://ci.example/run/1" in tps_issue["body"]
        opened = len(fake.issues)

        proc = sync(fake, tmp_path, root, candidate(690))
        assert proc.returncode == 0, proc.stderr
        assert len(fake.issues) == opened  # no duplicate
        # the issue holds tonight's report; the comment is one line with tonight's numbers
        [still] = [c["body"] for c in fake.comments[tps_issue["number"]] if "Still regressed" in c["body"]]
        assert still.splitlines()[1].startswith("Still regressed in `") and "`before.tps` −31." in still, still
        assert len(still.splitlines()) == 2 and "−31." in tps_issue["body"]

        for _run in (1, 2):
            proc = sync(fake, tmp_path, root, candidate(1010))
            assert proc.returncode == 0, proc.stderr
        assert tps_issue["state"] == "closed"
        assert "2 consecutive clean runs" in fake.comments[tps_issue["number"]][-1]["body"]
        assert all(i["state"] == "closed" for i in fake.issues.values())


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_missing_token_is_a_clear_error(setup, tmp_path):
    root, candidate = setup
    path = candidate(700)
    with FakeGitHub(tmp_path) as fake:
        proc = sync(fake, tmp_path, root, path, token=None)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: no GitHub token: set GH_TOKEN") and proc.stderr.count("\n") == 1
    assert json.loads(open(path).read())["status"] == "ok"  # results untouched


@pytest.mark.slow
def test_api_error_is_a_clear_error(setup, tmp_path):
    root, candidate = setup
    path = candidate(700)
    before = open(path).read()
    with FakeGitHub(tmp_path) as fake:
        fake.fail_with = 500
        proc = sync(fake, tmp_path, root, path)
    assert proc.returncode == 3
    assert "error: GitHub API GET repos/perf/ci/issues" in proc.stderr and "results are untouched" in proc.stderr
    assert open(path).read() == before


@pytest.mark.slow
def test_dry_run_writes_issue_files_named_by_fingerprint(setup, tmp_path):
    root, candidate = setup
    out = tmp_path / "issues"
    proc = run_perfci("issues", "sync", candidate(700), "--baseline-dir", str(root), "--dry-run", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    fp = fingerprint(CaseIdentity.of(make_result()))
    text = (out / f"{fp}.md").read_text()
    assert text.startswith("# tiny before: throughput −30.") and "labels: perf-regression" in text
    # the phase's tps per interval as a chart GitHub draws itself (an image would need a public URL)
    assert "<details><summary>tps per interval, tonight against the baseline</summary>" in text
    chart = text.split("```mermaid\n", 1)[1].split("```", 1)[0].splitlines()
    assert chart[:2] == ["xychart-beta", '    title "before: tps per interval (line 1: baseline mean, then tonight)"']
    assert chart[2:4] == ["    x-axis 1 --> 10", '    y-axis "tps" 0 --> 1111']  # 0 to the top line + 10 %
    assert [line.startswith("    line [") for line in chart[4:]] == [True, True]
    proc = run_perfci("issues", "sync", candidate(1000), "--baseline-dir", str(root), "--dry-run", "--out", str(tmp_path / "none"))
    assert proc.returncode == 0 and not (tmp_path / "none").exists()


@pytest.mark.slow
def test_a_patch_upgrade_keeps_the_issue_of_its_server_line(setup, tmp_path):
    """Issues follow the release line: 10.11.19 -> 10.11.20 comments on the same issue."""
    root, candidate = setup
    with FakeGitHub(tmp_path) as fake:
        assert sync(fake, tmp_path, root, candidate(700)).returncode == 0
        opened = dict(fake.issues)
        proc = sync(fake, tmp_path, root, candidate(700, version="10.11.20"))
        assert proc.returncode == 0, proc.stderr
        assert fake.issues.keys() == opened.keys() and "commented on #" in proc.stdout
    assert fingerprint(CaseIdentity.of(make_result(version="10.11.20"))) == \
        fingerprint(CaseIdentity.of(make_result(version="10.11.19")))
    assert fingerprint(CaseIdentity.of(make_result(version="10.11.20"), "version")) != \
        fingerprint(CaseIdentity.of(make_result(version="10.11.19"), "version"))


@pytest.mark.slow
def test_only_perfcis_own_clean_comments_count_towards_closing(setup, tmp_path):
    """Anyone can paste the clean marker into a comment; only the issue author's count,
    and the streak is read past the first page of comments."""
    root, candidate = setup
    with FakeGitHub(tmp_path) as fake:
        assert sync(fake, tmp_path, root, candidate(700)).returncode == 0
        issue = next(i for i in fake.issues.values() if "before: throughput" in i["title"])
        for _ in range(120):  # more than one page of chatter, each with the marker
            fake.comment_as(issue["number"], "mallory", "<!-- perfci-clean -->\nlooks fine to me")
        proc = sync(fake, tmp_path, root, candidate(1010))
        assert proc.returncode == 0, proc.stderr
        assert "clean run 1/2" in proc.stdout and issue["state"] == "open"
        assert ("GET", f"/api/v3/repos/perf/ci/issues/{issue['number']}/comments") in fake.requests
        proc = sync(fake, tmp_path, root, candidate(1010))
        assert "closed #" in proc.stdout and issue["state"] == "closed"


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_axis_values_are_escaped_in_issue_titles_and_bodies(tmp_path):
    """A case id carries axis values straight from a scenario file: `@someone` must not
    mention anyone, HTML must not render, backticks must not end the reproduce block."""
    case = "opt=@someone <img src=x> `x`"
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path, [make_result(tps=1000 + 5 * i, case=case) for i in range(5)]), root=root)
    [(path, result)] = write_results(tmp_path / "c", [make_result(tps=700, case=case)])
    data = result.dump()
    data["reproduce"] = "perfci run tiny --case '```\n@someone'"
    path.write_text(json.dumps(data))
    with FakeGitHub(tmp_path) as fake:
        proc = sync(fake, tmp_path, root, str(path))
        assert proc.returncode == 0, proc.stderr
        [issue] = fake.issues.values()  # tps, latency and their counters moved: one issue for the case
    body, title = issue["body"], issue["title"]
    assert "`before.tps`" in body and "`before.latency_ms_avg`" in body
    # the decision first: the case, its phase and what moved in words, then where
    assert title.startswith("tiny before: throughput −30.7 %, p95 latency +44.3 %; and 1 more phase(s) "
                            "(mariadb-10.11, smoke, opt=")
    assert "@someone" not in title and "@\u200bsomeone" in title
    # (the opening's reproduce line is one code span: no mention renders inside code)
    outside_code = "\n".join(line for line in body.split("````sh")[0].splitlines()
                              if not line.startswith("- **Reproduce**: `"))
    assert "@someone" not in outside_code and "@\u200bsomeone" in outside_code
    assert "<img" not in body and "&lt;img src=x&gt;" in body
    # #57: the four lines first (what, how sure, why, reproduce), after the hidden markers
    shown = [line for line in body.splitlines() if line and not line.startswith("<!--")]
    assert [line.split("**")[1] for line in shown[:4]] == ["What", "How sure", "Why", "Reproduce"], shown[:5]
    assert shown[0].startswith("- **What**: before: throughput −30.") and "tonight against its baseline" in shown[0]
    assert shown[1].startswith("- **How sure**: the night alone: its ")
    assert "````sh\nperfci run tiny --case '```\n@someone'\n````" in body  # a longer fence: no break-out


def test_text_from_result_and_confirmation_files_cannot_break_markers_or_mention(tmp_path):
    """A result id with `-->` would close the perfci-since marker (and break triage):
    refused on load. A confirmation's reason, sides and stored report are escaped."""
    from perfci.model.confirmation import Confirmation
    from perfci.report.reference_ab import markdown_section
    from perfci.store.results import RESULT_FILE

    from factories import write_results
    [(path, _)] = write_results(tmp_path, [make_result()])
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "id": "x --> <img src=x> @team"}))
    with pytest.raises(BadInput, match=r"field id: String should match pattern"):
        RESULT_FILE.load(path)
    path.write_text(json.dumps({**data, "phases": {"<b>x</b>": data["phases"]["before"]}}))
    with pytest.raises(BadInput, match=r"field phases"):
        RESULT_FILE.load(path)
    c = Confirmation(result_id="r1", case="default", status="not-run", nightly_regressions=[],
                     reason="@team see <!-- perfci-since: evil -->", a="x` @a", b="y", profile="p",
                     report="| m |\n|---|\n| @boss ![i](https://x/y.png) <script> |")
    text = "\n".join(markdown_section(c))
    assert "@team" not in text and "@boss" not in text and "<!--" not in text and "<script>" not in text
    assert "![" not in text and "| m |" in text  # the report's table still renders


def test_a_history_run_url_becomes_a_dashboard_link_only_when_it_is_http(tmp_path):
    from perfci.report.dashboard_site import build
    from perfci.store.history_files import append
    from perfci.util.text import web_link

    assert web_link("https://ci.example/run/1") and web_link("http://x/y")
    assert not any(web_link(u) for u in ("javascript:alert(1)", "data:text/html,x", "https://x/\"onload=", ""))
    history = tmp_path / "history"
    append([make_result()], history, run_url="javascript:alert(document.cookie)")
    append([make_result()], history, run_url="https://ci.example/run/2")
    build(history, tmp_path / "site")
    pages = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert 'href="https://ci.example/run/2"' in pages and "javascript:" not in pages
    proc = run_perfci("dashboard", str(history), "--out", str(tmp_path / "s2"), "--repo-url", "javascript:alert(1)")
    assert proc.returncode == 2 and "--repo-url" in proc.stderr and "expected an http(s) URL" in proc.stderr


def test_a_long_phase_is_charted_in_at_most_sixty_points_averaged():
    from perfci.report.plots import MAX_POINTS, _downsample
    drawn = _downsample([float(i) for i in range(130)])
    assert len(drawn) <= MAX_POINTS and drawn[0] == 1.0 and drawn[-1] == 129.0  # chunks of 3, the last one alone


@pytest.mark.slow
def test_issues_opened_per_metric_by_an_older_perfci_hand_over_to_the_case_issue(setup, tmp_path):
    """Before one issue per case, each metric had its own. A clean night counts on them as
    before; the night the case regresses, its own issue opens and the old ones close,
    pointing to it; after that the case's issue carries the case."""
    from perfci.alert.regression_issues import metric_fingerprint
    root, candidate = setup
    case = CaseIdentity.of(make_result())
    with FakeGitHub(tmp_path) as fake:
        for number, key in ((1, "before.tps"), (2, "before.latency_ms_avg")):
            fake.issues[number] = {"number": number, "title": f"Perf regression: {key}", "state": "open",
                                   "body": f"<!-- perfci-fingerprint: {metric_fingerprint(case, key)} -->",
                                   "user": {"login": fake.login}, "labels": [{"name": "perf-regression"}]}
            fake.comments[number] = []
        proc = sync(fake, tmp_path, root, candidate(1010))
        assert proc.returncode == 0, proc.stderr
        assert all("Clean runs: 1 of 2" in fake.comments[n][-1]["body"] for n in (1, 2)) and len(fake.issues) == 2
        proc = sync(fake, tmp_path, root, candidate(700))
        assert proc.returncode == 0, proc.stderr
        assert "opened #3 (before.tps)" in proc.stdout
        assert fake.issues[3]["body"].startswith(f"<!-- perfci-fingerprint: {fingerprint(case)} -->")
        for n in (1, 2):
            assert fake.issues[n]["state"] == "closed" and "continues in #3" in fake.comments[n][-1]["body"]
        proc = sync(fake, tmp_path, root, candidate(690))
        assert "commented on #3" in proc.stdout and len(fake.issues) == 3
