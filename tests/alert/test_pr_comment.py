"""The sticky PR comment (`perfci issues pr-comment`), through the real `gh` against the
fake GitHub API: one comment per PR, edited on a new push, never written for a head
the A/B did not measure."""

from __future__ import annotations

import json

import pytest

from perfci.alert.pr_comment import MARK, ABReport, body, load_reports
from perfci.model.ab_verdict import AbVerdict

from conftest import run_perfci
from fake_github import FakeGitHub

SHA1, SHA2 = "1" * 40, "2" * 40
REGRESSED = ("## perfci A/B (interleaved): tiny · profile `smoke`\n\n**Regression** in 1 of 4 judged metrics: "
             "`only.tps` B/A 0.700 [0.650, 0.750] (-30.0%, 99.88% interval).\n\n| metric | ... |\n")
CLEAN = ("## perfci A/B (interleaved): tiny · profile `smoke`\n\n**No change** beyond the tolerance in 4 judged "
         "metrics · smallest detectable change of this run: 3.1% (best metric) to 6.0%.\n")


def verdict_json(outcome: str, line: str, blind: float | None = None) -> dict:
    return {"schema": "perfci.ab-verdict/2", "outcome": outcome, "verdict_line": line, "mode": "interleaved",
            "scenario": "tiny", "profile": "smoke", "case": "default", "scenario_hash": "sha256:x",
            "runner_class": "local", "host": "vm", "a": {"spec": "local", "version": "10.11"},
            "b": {"spec": "local", "version": "10.11"}, "blind_below": blind,
            "regressions": ["only.tps"] if outcome == "regression" else [],
            "metrics": [{"key": "only.tps", "judged": True, "verdict": outcome if outcome == "regression" else
                         "unchanged", "a": 100.0, "b": 70.0 if outcome == "regression" else 99.0}]}


REGRESSED_LINE = REGRESSED.split("\n\n")[1]
CLEAN_LINE = CLEAN.split("\n\n")[1].strip()
VERDICTS = {REGRESSED: verdict_json("regression", REGRESSED_LINE), CLEAN: verdict_json("unchanged", CLEAN_LINE, blind=0.06)}


def ab(name: str, text: str, outcome: str | None = None, line: str | None = None, blind: float | None = None) -> ABReport:
    """A report with its typed verdict (the JSON `perfci ab --json` writes beside it)."""
    data = VERDICTS[text] if outcome is None else verdict_json(outcome, line or text, blind)
    return ABReport(name, text, AbVerdict.model_validate(data))


def reports(tmp_path, **texts):
    """ab-NAME.md and, beside it, ab-NAME.json: what the PR check uploads."""
    paths = []
    for name, text in texts.items():
        path = tmp_path / f"ab-{name}.md"
        path.write_text(text)
        path.with_suffix(".json").write_text(json.dumps(VERDICTS[text]))
        paths.append(str(path))
    return paths


@pytest.mark.slow
def test_one_comment_per_pr_edited_on_the_next_push_and_refused_for_a_stale_head(tmp_path):
    with FakeGitHub(tmp_path) as fake:
        env = fake.env(tmp_path / "gh")
        fake.add_pull(7, SHA1)
        fake.comment_as(7, "reviewer", "looks good", "MEMBER")
        proc = run_perfci("issues", "pr-comment", *reports(tmp_path, tiny=REGRESSED), "--pr", "7", "--head-sha", SHA1,
                          env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "commented on #7"
        [theirs, ours] = fake.comments[7]
        assert ours["body"].startswith(MARK + "\n### perfci: 🔴 **Regression**: the check fails")
        assert "- `tiny`: **Regression** in 1 of 4 judged metrics: `only.tps` B/A 0.700" in ours["body"]
        assert "<details><summary>tiny: full report</summary>" in ours["body"]
        # a second push: the same comment, edited, now clean
        fake.add_pull(7, SHA2)
        proc = run_perfci("issues", "pr-comment", *reports(tmp_path, tiny=CLEAN), "--pr", "7", "--head-sha", SHA2,
                          env=env)
        assert proc.returncode == 0 and proc.stdout.strip() == "edited the perfci comment on #7", proc.stderr
        assert len(fake.comments[7]) == 2 and theirs["body"] == "looks good"
        assert fake.comments[7][1]["body"].startswith(
            MARK + "\n### perfci: ✅ **No change beyond 6 %**: every judged metric within its tolerance")
        assert f"at `{SHA2[:12]}`" in fake.comments[7][1]["body"]
        # the report of the older push arrives late: its head is no longer the PR's
        proc = run_perfci("issues", "pr-comment", *reports(tmp_path, tiny=REGRESSED), "--pr", "7", "--head-sha", SHA1,
                          env=env)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"PR #7: its head is {SHA2[:12]}, not the measured {SHA1[:12]}" in proc.stderr
        assert "✅" in fake.comments[7][1]["body"]
        assert ("PATCH", "/api/v3/repos/perf/ci/issues/comments/1002") in fake.requests
        # a third push: a triager's label accepts nothing (triage access adds labels; removed once: it did)
        fake.add_pull(7, SHA1)
        fake.permissions["triager"] = "triage"
        fake.add_label(7, "perf-expected", by="triager")
        proc = run_perfci("issues", "pr-comment", *reports(tmp_path, tiny=REGRESSED), "--pr", "7", "--head-sha", SHA1,
                          env=env)
        assert proc.returncode == 0 and "🔴 **Regression**" in fake.comments[7][1]["body"], proc.stderr
        # a maintainer accepts it: the label, read from GitHub with who added it, says so
        fake.add_label(7, "perf-expected")
        proc = run_perfci("issues", "pr-comment", *reports(tmp_path, tiny=REGRESSED), "--pr", "7", "--head-sha", SHA1,
                          env=env)
        assert proc.returncode == 0, proc.stderr
        assert fake.comments[7][1]["body"].startswith(MARK + "\n### perfci: 🟡 **Regression, accepted**")
        assert len(fake.comments[7]) == 2


def test_the_comment_says_a_regression_was_accepted_and_when_nothing_was_measured():
    text = body([ab("tiny", REGRESSED)], SHA1, accepted=True)
    assert text.splitlines()[1] == "### perfci: 🟡 **Regression, accepted** by the `perf-expected` label"
    assert body([], SHA1, accepted=False).splitlines()[1] == "### perfci: ✅ **No scenario changed**: nothing to A/B."
    unsure = "**No regression found, not conclusive**: 1 of 4 judged metrics could neither be flagged nor ..."
    assert "⚪ **No regression found**" in body([ab("a", CLEAN), ab("b", unsure, "inconclusive")], SHA1, False)
    # what the PR's A/Bs could not see, the worst of them, in the first line
    blind = ("**No regression found, not conclusive**: 1 of 4 judged metrics could neither be flagged nor shown "
             "within their tolerance (could not see below: `only.tps` 12.5%, `only.qps` 7%) · smallest detectable "
             "change of this run: 3.0% (best metric) to 12.5%.")
    assert body([ab("a", CLEAN), ab("b", blind, "inconclusive", blind=0.125)], SHA1, False).splitlines()[1] == (
        "### perfci: ⚪ **No regression found**, not every metric conclusive: could not see changes below 12.5 %")
    assert ab("a", CLEAN).blind_below == 6.0 and ab("r", "| rounds table |", "unchanged").blind_below is None
    # the typed outcome decides, whatever the prose says
    assert ab("r", "| `only.tps` ↑ | ... | ✅ unchanged |", "regression").regressed
    assert not ab("r", "**Regression** everywhere", "unchanged").regressed


def test_a_regressed_ab_comes_with_the_command_that_reruns_it():
    """#57: the comment opens with each regressed A/B's four lines (report/opening.py), the
    last the `perfci ab` that reruns it, from the typed verdict; a side built from a
    commit names the clone to build from."""
    data = verdict_json("regression", REGRESSED_LINE)
    data["a"]["spec"], data["b"]["spec"] = "build:mariadb@" + "0" * 40, "build:mariadb@" + "1" * 40
    data["metrics"][0].update(ratio=0.7, p_adjusted=0.00002)
    data["alpha"] = 0.005
    text = body([ABReport("tiny", REGRESSED, AbVerdict.model_validate(data))], SHA1, accepted=False)
    opening = text.split("\n")[3:8]
    assert opening == [
        "**tiny**", "- **What**: B is worse. only: throughput −30.0 %.",
        "- **How sure**: very sure: p under 0.0001 after Holm over 1 judged metrics (flagged below 0.50%, the chance of "
        "any false regression in this A/B).",
        "- **Why**: no explain pass ran (`--explain never`, or it could not profile)",
        f"- **Reproduce**: `PERFCI_BUILD_REPO=YOUR_CLONE perfci ab tiny --profile smoke --a build:mariadb@{'0' * 40} "
        f"--b build:mariadb@{'1' * 40}`"], text
    assert "**Reproduce**" not in body([ab("tiny", CLEAN)], SHA1, accepted=False)


def test_the_why_comes_from_the_typed_verdict_and_its_flame_graphs_from_the_artifact():
    """#55/#57: the Why shown is the verdict's (never cut out of the report), and its flame
    graphs are named in the uploaded artifact, not as a path on the runner."""
    data = verdict_json("regression", REGRESSED_LINE)
    data["why"] = "where the instructions went (callgrind)\n\n| `psi_mutex_lock` | 1 | 2 |"
    data["explain_dir"] = "/home/runner/_work/team/team/results/tiny-ab-20261129.explain"
    data["a"]["run"] = {"server": "local", "config": []}
    data["b"]["run"] = {"server": "local", "config": ["performance_schema=ON"]}
    text = body([ABReport("tiny", REGRESSED + "\n### Why: something else entirely\n", AbVerdict.model_validate(data))],
                SHA1, accepted=False, run_url="https://github.example/dev/team/actions/runs/9")
    assert "#### Why tiny got slower: where the instructions went (callgrind)" in text
    assert "something else entirely" not in text.split("<details>")[0]
    assert ("Flame graphs: `tiny-ab-20261129.explain/` in the `pr-explain` artifact of "
            "[the run](https://github.example/dev/team/actions/runs/9)") in text
    assert "/home/runner" not in text.split("<details>")[0]
    assert "--b local --b-config performance_schema=ON" in text  # the typed side, its config kept


def test_hostile_artifact_text_is_rendered_inert():
    """Report names, verdict lines and whole reports come from an artifact the PR's own
    run wrote: no mention, HTML (an open <details>, a closed <summary> with an image)
    or comment marker renders; the report's table and emphasis stay."""
    hostile = ("**Regression** @org/team in `only.tps` </summary><img src=x onerror=alert(1)> <details open>\n\n"
               "<!-- perfci-pr-comment -->\n| metric | B/A |\n|---|---|\n| only.tps | 0.7 |\n![x](https://e/x.png)\n")
    text = body([ab("evil</summary><details open>@org/admins", hostile, "regression", hostile.split("\n")[0])], SHA1,
                accepted=False)
    assert text.count(MARK) == 1 and text.startswith(MARK)  # the report cannot add a second marker
    for raw in ("<img", "<details open>", "</summary><", "@org/team", "@org/admins", "![x]"):
        assert raw not in text, raw
    assert "@\u200borg/team" in text and "&lt;img src=x" in text
    assert "| only.tps | 0.7 |" in text and "**Regression**" in text  # tables and emphasis stay
    assert text.count("<details>") == text.count("</details>") == 1


def test_code_spans_keep_what_they_hold_and_cannot_smuggle_html_out():
    """A function name with a template argument shows as written in code (an escaped
    `&lt;` inside a code span is shown literally by GitHub); what only looks like a code
    span to a careless reader stays escaped: after a backslash, across a table's pipe, or
    with a backtick run that does not close."""
    report = ("**Regression** in `full-scan.tps`\n\n| `rec_init_offsets_comp_ordinary<false, false>` | self |\n"
              "\\`<img src=a>` and | `x|<img src=b>` | and ``<img src=c>` @org/team\n")
    text = body([ab("a", report, "regression", "**Regression** in `full-scan.tps`")], SHA1, accepted=False)
    assert "`rec_init_offsets_comp_ordinary<false, false>`" in text
    for raw in ("<img src=a>", "<img src=b>", "<img src=c>", "@org/team"):
        assert raw not in text, raw


def test_a_body_over_githubs_limit_is_capped_with_a_pointer_to_the_artifact():
    big = REGRESSED + "| row |\n" * 12_000  # ~100 KB, as a microbench A/B report can be
    text = body([ab("a", big, "regression", REGRESSED_LINE), ab("b", CLEAN)], SHA1, accepted=False,
                run_url="https://x/run/1")
    assert len(text) <= 65_536
    assert "a: the full report is in the run's artifacts ([run](https://x/run/1)) (too long for a comment)." in text
    assert "b: full report</summary>" in text  # what fits is kept


@pytest.mark.slow
def test_the_typed_verdict_beside_a_report_decides_not_its_prose(tmp_path):
    """perfci ab --json writes ab-NAME.json beside ab-NAME.md: the comment reads the
    outcome from it, whatever the report's wording says."""
    [md] = reports(tmp_path, tiny=CLEAN)  # the prose says "No change"
    (tmp_path / "ab-tiny.json").write_text(json.dumps(verdict_json("regression", "**Regression** in 1 of 4")))
    [report] = load_reports([tmp_path / "ab-tiny.md"])
    assert report.regressed and report.verdict == "**Regression** in 1 of 4"
    assert "🔴 **Regression**" in body([report], SHA1, accepted=False).splitlines()[1]
    (tmp_path / "ab-tiny.json").write_text(json.dumps(verdict_json("unchanged", "**No change** in 4", blind=0.081)))
    [report] = load_reports([tmp_path / "ab-tiny.md"])
    assert not report.regressed and report.blind_below == 8.1
    (tmp_path / "ab-tiny.json").write_text('{"schema": "perfci.ab-verdict/9"}')
    proc = run_perfci("issues", "pr-comment", md, "--pr", "7", "--head-sha", SHA1, "--dry-run")
    assert proc.returncode == 2 and "ab-tiny.json" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # a report without its verdict is refused, not read from its prose
    (tmp_path / "ab-tiny.json").unlink()
    proc = run_perfci("issues", "pr-comment", md, "--pr", "7", "--head-sha", SHA1, "--dry-run")
    assert proc.returncode == 2 and "no verdict beside it (ab-tiny.json" in proc.stderr, proc.stderr


def test_the_harness_check_and_baselines_diff_reports_carry_their_own_typed_verdicts(tmp_path):
    """The PR check's other reports: their CheckVerdict decides (a changed harness fails
    the comment's head line; a baselines edit that moved thresholds is not a regression)."""
    (tmp_path / "ab-harness.md").write_text("**Harness unchanged** (the prose)\n")
    (tmp_path / "ab-harness.json").write_text(json.dumps(
        {"schema": "perfci.check-verdict/1", "check": "harness", "outcome": "regression",
         "verdict_line": "**The harness changed what it measures**: `tiny` did different work."}))
    (tmp_path / "ab-baselines.md").write_text("**Baseline edit**: 1 pinned baseline(s) changed\n")
    (tmp_path / "ab-baselines.json").write_text(json.dumps(
        {"schema": "perfci.check-verdict/1", "check": "baselines", "outcome": "moved",
         "verdict_line": "**Baseline edit**: 1 pinned baseline(s) changed"}))
    harness, baselines = load_reports([tmp_path / "ab-harness.md", tmp_path / "ab-baselines.md"])
    assert harness.regressed and not baselines.regressed and harness.blind_below is None
    text = body([harness, baselines], SHA1, accepted=False)
    assert text.splitlines()[1].startswith("### perfci: 🔴 **Regression**")
    assert "- `harness`: **The harness changed what it measures**" in text and "- `baselines`: **Baseline edit**" in text


@pytest.mark.slow
def test_the_pr_checks_acceptance_counts_the_label_only_from_write_access(tmp_path):
    """`perfci pr-check accepted`, the PR check's own job before it measures: the label as
    GitHub has it now and who added it, never the event's label list (removed once, who
    added it not asked: a triager's label accepted the regression)."""
    output = tmp_path / "github-output"
    with FakeGitHub(tmp_path) as fake:
        env = {**fake.env(tmp_path / "gh"), "GITHUB_OUTPUT": str(output)}

        def answer() -> tuple[str, str]:
            output.write_text("")
            proc = run_perfci("pr-check", "accepted", "--pr-number", "7", env=env)
            assert proc.returncode == 0, proc.stderr
            return output.read_text(), proc.stdout.strip()

        fake.add_pull(7, SHA1)
        assert answer() == ("perf-expected=false\n", "perfci: PR #7 does not carry the perf-expected label")
        fake.permissions["triager"] = "triage"
        fake.add_label(7, "perf-expected", by="triager")
        assert answer() == ("perf-expected=false\n", "perfci: perf-expected added to PR #7 by @triager, who has no "
                            "write access: not accepted (someone with write access must add it)")
        fake.add_label(7, "perf-expected")  # the maintainer, last
        assert answer() == ("perf-expected=true\n",
                            "perfci: perf-expected added to PR #7 by @maintainer, who has write access: accepted")
        # GitHub failing: exit 3, nothing written (the measuring job does not run: no answer, no verdict)
        fake.fail_with = 500
        output.write_text("")
        proc = run_perfci("pr-check", "accepted", "--pr-number", "7", env=env)
        assert proc.returncode == 3 and output.read_text() == "", proc.stderr
