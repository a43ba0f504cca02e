"""`perfci pr-check`: what a pull request changed as A/Bs, the check's verdict and what it
hands the comment, and its refusals, without a server (the A/Bs themselves under act:
tests/e2e/test_e2e_act_pr.py); the harness check's rounds on the real server at the end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from perfci.sessions import pr_check
from perfci.sessions.pr_check import CheckRun, PlannedAb
from perfci.store.baseline_files import update_baselines

from conftest import REPO, SOURCE_ENV, run_perfci, tracked_copy, write_tiny
from factories import make_result, write_results

CASE = "local/mariadb-10.11/tiny/smoke/default.json"  # make_result's case


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always",
                           *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def project(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    (repo / "scenarios").mkdir(parents=True)
    git(repo, "init", "-q")
    return repo


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_each_changed_scenario_is_ab_d_base_version_against_head_version(tmp_path):
    repo = project(tmp_path)
    for name in ("kept", "edited", "deleted"):
        write_tiny(repo / "scenarios", name=name)
    (repo / "scenarios" / "notes.md").write_text("x\n")
    base = commit(repo, "base")
    edited = repo / "scenarios" / "edited.yaml"
    edited.write_text(edited.read_text().replace("time: 2", "time: 3"))  # what a run executes
    (repo / "scenarios" / "deleted.yaml").unlink()
    write_tiny(repo / "scenarios", name="added")
    (repo / "scenarios" / "notes.md").write_text("y\n")
    commit(repo, "head")
    planned = pr_check.scenario_abs(base, repo, tmp_path / "work")
    kept = tmp_path / "work" / "base-scenarios" / "edited.yaml"
    assert planned == [PlannedAb("added", "added.yaml", ("scenarios/added.yaml",)),
                       PlannedAb("edited", "edited.yaml", ("scenarios/edited.yaml", "--a-scenario", str(kept)))]
    assert "time: 2" in kept.read_text() and kept.read_text().startswith("name: edited")


@pytest.mark.slow
def test_an_edit_that_changes_nothing_measured_is_no_ab(tmp_path):
    """A scenario's description (or a comment) is in no case's hash: the PR check runs no
    A/B for it and says so, typed for the comment; an edit of its workload is A/B'd."""
    repo = project(tmp_path)
    scenario = write_tiny(repo / "scenarios", name="tiny")
    base = commit(repo, "base")
    scenario.write_text(scenario.read_text().replace("tiny scenario for tests", "a tiny scenario, described")
                        + "# a comment\n")
    commit(repo, "words")
    unchanged: list[str] = []
    assert pr_check.scenario_abs(base, repo, tmp_path / "work", unchanged) == [] and unchanged == ["tiny.yaml"]
    done = run_perfci("pr-check", "scenarios", "--base", base, cwd=repo)
    assert done.returncode == 0, done.stderr
    typed = json.loads((repo / "pr-report" / "ab-tiny.json").read_text())
    assert typed["check"] == "scenario" and typed["outcome"] == "unchanged"
    assert typed["verdict_line"].startswith("**Unchanged**: the PR's edit of `tiny.yaml` changes nothing")
    scenario.write_text(scenario.read_text().replace("time: 2", "time: 3"))
    commit(repo, "longer")
    assert [ab.stem for ab in pr_check.scenario_abs(base, repo, tmp_path / "work2")] == ["tiny"]


def test_each_changed_servers_yaml_id_is_ab_d_on_the_named_or_the_first_scenarios(tmp_path):
    base, head = tmp_path / "base.yaml", tmp_path / "head.yaml"
    base.write_text("servers:\n  - {id: a, spec: local}\n  - {id: b, spec: 'local:/opt/b1/mariadbd'}\n")
    head.write_text("servers:\n  - {id: a, spec: local}\n  - {id: b, spec: 'local:/opt/b2/mariadbd'}\n"
                    "  - {id: c, spec: 'local:/opt/c/mariadbd'}\n")
    first_two = sorted(p.stem for p in (REPO / "scenarios").glob("*.yaml"))[:pr_check.PR_SCENARIOS]
    assert list(pr_check.server_changes(base, head, [], REPO)) == [
        *(("b", "local:/opt/b1/mariadbd", "local:/opt/b2/mariadbd", s) for s in first_two),
        *(("c", None, "local:/opt/c/mariadbd", s) for s in first_two)]
    assert list(pr_check.server_changes(base, head, ["microbench"], REPO)) == [
        ("b", "local:/opt/b1/mariadbd", "local:/opt/b2/mariadbd", "microbench"),
        ("c", None, "local:/opt/c/mariadbd", "microbench")]
    assert list(pr_check.server_changes(base, base, [], REPO)) == []
    assert [c[0] for c in pr_check.server_changes(None, head, ["x"], REPO)] == ["a", "b", "c"]  # servers.yaml added


def test_an_added_server_id_is_said_and_a_changed_one_planned(tmp_path):
    repo = project(tmp_path)
    write_tiny(repo / "scenarios", name="tiny")
    (repo / "servers.yaml").write_text("servers:\n  - {id: a, spec: local}\n")
    base = commit(repo, "base")
    (repo / "servers.yaml").write_text("servers:\n  - {id: a, spec: 'local:/opt/a2/mariadbd'}\n"
                                       "  - {id: n, spec: local}\n")
    commit(repo, "head")
    summary = tmp_path / "summary.md"
    run = CheckRun(tmp_path / "pr-report", tmp_path / "results", summary)
    assert pr_check.server_abs(base, repo, tmp_path, ["tiny"], run) == [
        PlannedAb("server-a-tiny", "a on tiny", ("tiny", "--a", "local", "--b", "local:/opt/a2/mariadbd"))]
    assert "servers.yaml adds `n`: nothing to A/B it against" in summary.read_text()


@pytest.mark.parametrize("expected, code", [(False, 1), (True, 0)])
def test_a_regression_fails_the_check_unless_the_pr_carries_perf_expected(tmp_path, capsys, expected, code):
    summary = tmp_path / "summary.md"
    run = CheckRun(tmp_path / "pr-report", tmp_path / "results", summary, regressed=["tiny.yaml", "a on tiny"])
    assert pr_check.conclude(run, 7, expected) == code
    assert (tmp_path / "pr-report" / "pr-number").read_text() == "7\n"
    out = capsys.readouterr().out
    if expected:
        assert "Regression in tiny.yaml a on tiny: accepted by the perf-expected label." in summary.read_text()
    else:
        assert out.startswith("::error::perfci: B regressed in tiny.yaml a on tiny (see the job summary)")
    clean = CheckRun(tmp_path / "clean", tmp_path / "results", None)
    assert pr_check.conclude(clean, None, False) == 0 and list((tmp_path / "clean").iterdir()) == []


@pytest.mark.slow
def test_a_pr_that_changes_nothing_measured_passes_and_a_broken_baseline_is_named(tmp_path):
    """`perfci pr-check scenarios` in the PR's checkout: a description-only PR runs no A/B and
    passes; an edit of baselines/ is shown as the thresholds it moves (typed for the
    comment); a baseline that does not load is exit 2, named, and nothing half-written."""
    repo = project(tmp_path)
    (repo / "README.md").write_text("x\n")
    base = commit(repo, "base")
    (repo / "README.md").write_text("y\n")
    commit(repo, "a description only")
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    done = run_perfci("pr-check", "scenarios", "--base", base, "--pr-number", "3", cwd=repo, env=env)
    assert done.returncode == 0 and "nothing to A/B" in done.stderr, done.stderr
    assert sorted(p.name for p in (repo / "pr-report").iterdir()) == ["pr-number"] and not summary.exists()
    update_baselines(write_results(tmp_path / "runs", [make_result(tps=t) for t in (1000, 1060, 950)]),
                     root=repo / "baselines")
    commit(repo, "pin a baseline")
    done = run_perfci("pr-check", "scenarios", "--base", base, cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    report = repo / "pr-report" / "ab-baselines.md"
    assert "(added)" in report.read_text() and "– → 3" in report.read_text()
    typed = json.loads(report.with_suffix(".json").read_text())  # what the PR comment reads
    jsonschema.validate(typed, json.loads((REPO / "docs/schema/check-verdict.schema.json").read_text()))
    assert typed["check"] == "baselines" and typed["outcome"] == "moved"
    # the validate job's step: the same diff alone
    done = run_perfci("pr-check", "baselines", "--base", base, "--report", str(tmp_path / "diff.md"), cwd=repo)
    assert done.returncode == 0 and (tmp_path / "diff.md").read_text() == report.read_text()
    (repo / "baselines" / CASE).write_text("{not json")
    commit(repo, "break it")
    done = run_perfci("pr-check", "baselines", "--base", base, "--report", str(tmp_path / "broken.md"), cwd=repo)
    assert done.returncode == 2 and CASE in done.stderr and not (tmp_path / "broken.md").exists()


@pytest.mark.slow
@pytest.mark.parametrize("args, needle", [
    (["--flavor", "oracle"], "'oracle' is not one of 'mysql', 'percona', 'mariadb'"),
    (["--head", "abc"], "--head 'abc': a full 40-character commit SHA is needed"),
    (["--scenarios", "../outside.yaml"], "--scenarios: '../outside.yaml': a scenario name or a relative path"),
    (["--phases", "full scan;rm"], "--phases: phase 'scan;rm': letters, digits"),
])
def test_server_code_refuses_bad_input_in_one_line(tmp_path, args, needle):
    given = dict(zip(args[::2], args[1::2], strict=True))
    base = {"--flavor": "mariadb", "--base": "0" * 40, "--head": "1" * 40, "--mirror": str(tmp_path),
            "--scenarios": "microbench", **given}
    argv = [a for pair in base.items() for a in pair]
    done = run_perfci("pr-check", "server-code", *argv, cwd=tmp_path, env={"PERFCI_SANDBOX_USER": "64201:64201"})
    assert done.returncode == 2 and needle in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def stand_in_build(tmp_path: Path, code: int) -> Path:
    """A build-server that records its arguments and the cache paths it would take from
    its environment, then exits CODE."""
    script = tmp_path / "build-server"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/calls"\n'
                      f'echo "${{CCACHE_DIR:-}}${{PERFCI_BUILD_CACHE:-}}${{PERFCI_SRC_CACHE:-}}${{PERFCI_SNAPSHOT_DIR:-}}'
                      f'|$PERFCI_BUILD_REPO|${{PERFCI_SANDBOX_SERVERS:-}}|${{PERFCI_BUILD_TRUSTED_COMMIT:-}}" '
                      f'>> "{tmp_path}/env"\necho "${{PERFCI_BUILD_SCRATCH:-}}" >> "{tmp_path}/scratch"\nexit {code}\n')
    script.chmod(0o755)
    return script


@pytest.mark.slow
def test_a_pull_requests_code_is_built_only_in_the_sandbox_and_only_in_the_jobs_caches(tmp_path):
    """Removed once: without the sandbox check the builds ran; without dropping the
    runner's cache variables the build saw /trusted. The A/Bs' servers run sandboxed, their
    files in the job's cache."""
    script = stand_in_build(tmp_path, 3)
    argv = ["pr-check", "server-code", "--flavor", "mariadb", "--base", "0" * 40, "--head", "1" * 40, "--mirror",
            str(tmp_path), "--scenarios", "microbench"]
    trusted = {"CCACHE_DIR": "/trusted/ccache", "PERFCI_BUILD_CACHE": "/trusted/builds",
               "PERFCI_SRC_CACHE": "/trusted/src", "PERFCI_SNAPSHOT_DIR": "/trusted/snapshots",
               "PERFCI_BUILD_SCRIPT": str(script), "PERFCI_CACHE": str(tmp_path / "job-cache")}
    done = run_perfci(*argv, cwd=tmp_path, env={**trusted, "PERFCI_SANDBOX_USER": ""})
    assert done.returncode == 3 and "no sandbox account (PERFCI_SANDBOX_USER)" in done.stderr, done.stderr
    assert not (tmp_path / "calls").exists()
    done = run_perfci(*argv, cwd=tmp_path, env={**trusted, "PERFCI_SANDBOX_USER": "64201:64201"})
    assert done.returncode == 3 and f"build of {'0' * 40} failed (exit 3)" in done.stderr, done.stderr
    assert (tmp_path / "calls").read_text() == f"mariadb {'0' * 40}\n"  # the head is not built, nothing A/B'd
    # no trusted cache; the mirror to build from; the servers sandboxed in the job's cache
    assert (tmp_path / "env").read_text() == f"|{tmp_path}|{tmp_path / 'job-cache' / 'servers'}|{'0' * 40}\n"
    # the PR's own builds go to this job's scratch dir, emptied with the job (but for their logs)
    [scratch] = (tmp_path / "scratch").read_text().split()
    assert Path(scratch).parent == tmp_path / "job-cache" / "jobs" and list(Path(scratch).iterdir()) == []
    assert not list((tmp_path / "pr-report").glob("ab-*"))


def test_a_pr_check_builds_with_perfcis_build_script_never_the_checkouts(tmp_path, monkeypatch):
    """The checkout is the PR's code: a scripts/build-server of its own (with a scenarios/
    that makes it look like a perfci project) is never what builds."""
    monkeypatch.delenv("PERFCI_BUILD_SCRIPT", raising=False)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scripts" / "build-server").write_text("#!/bin/sh\ntouch /tmp/owned\n")
    monkeypatch.chdir(tmp_path)
    assert pr_check.trusted_build_script() == REPO / "scripts" / "build-server"
    from perfci.providers.basedirs import _build_server_script
    from perfci.providers.spec import parse_spec
    monkeypatch.setenv("PERFCI_BUILD_SCRIPT", str(REPO / "scripts" / "build-server"))
    assert _build_server_script(parse_spec(f"build:mariadb@{'0' * 40}")) == REPO / "scripts" / "build-server"


def test_a_fork_builds_only_where_root_said_yes(tmp_path):
    opt_in = tmp_path / "fork-server-builds"
    assert "root allowed it" in (pr_check.fork_refusal(opt_in) or "")
    opt_in.write_text("")
    opt_in.chmod(0o644)
    if os.geteuid() == 0:  # root-owned, writable by root alone
        assert pr_check.fork_refusal(opt_in) is None
    opt_in.chmod(0o666)  # anyone could have made it
    assert pr_check.fork_refusal(opt_in) is not None


def submodule_project(tmp_path: Path) -> tuple[Path, Path, str]:
    """A server repository with a submodule `libs/client` from an upstream; the mirror
    (a bare clone) the check reads; the base commit."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "a.c").write_text("1\n")
    commit(upstream, "upstream 1")
    repo = tmp_path / "server"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "CMakeLists.txt").write_text("project(x)\n")
    git(repo, "submodule", "add", "-q", str(upstream), "libs/client")
    base = commit(repo, "base")
    return upstream, repo, base


def mirror_of(repo: Path, tmp_path: Path) -> Path:
    mirror = tmp_path / "mirror.git"
    if not mirror.exists():
        git(tmp_path, "init", "-q", "--bare", str(mirror))
    git(repo, "push", "-q", "--force", str(mirror), "HEAD:refs/heads/pr")
    return mirror


def test_a_fork_may_move_a_submodule_only_to_a_commit_of_its_upstream(tmp_path):
    """Removed once: without the check, a gitlink to a commit only the fork has (its code,
    fetched from wherever .gitmodules says) passed."""
    upstream, repo, base = submodule_project(tmp_path)
    check = pr_check.UpstreamCheck(tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    # to the upstream's next commit: fine
    (upstream / "a.c").write_text("2\n")
    commit(upstream, "upstream 2")
    git(repo / "libs" / "client", "pull", "-q", "origin", git(upstream, "branch", "--show-current"))
    head = commit(repo, "bump the client library")
    assert pr_check.submodule_refusal(mirror_of(repo, tmp_path), base, head, check) is None
    # to a commit that only the fork's copy has
    (repo / "libs" / "client" / "a.c").write_text("evil\n")
    git(repo / "libs" / "client", "commit", "-qam", "only here")
    head = commit(repo, "a commit upstream never saw")
    refusal = pr_check.submodule_refusal(mirror_of(repo, tmp_path), base, head, check)
    assert refusal is not None and "moves submodule libs/client to" in refusal and "does not have" in refusal
    # .gitmodules itself
    (repo / ".gitmodules").write_text((repo / ".gitmodules").read_text().replace(str(upstream), "https://evil.example"))
    head = commit(repo, "elsewhere")
    refusal = pr_check.submodule_refusal(mirror_of(repo, tmp_path), base, head, check)
    assert refusal == "the pull request changes .gitmodules: a fork may not change where submodules come from"
    assert pr_check.submodule_refusal(mirror_of(repo, tmp_path), base, base, check) is None


def test_perfci_imports_nothing_from_the_working_directory(tmp_path):
    """A PR's checkout is the working directory of every step: a `click.py` or `perfci/`
    of its own must not run (scripts/perfci, as the workflows start it). Removed once:
    without PYTHONSAFEPATH the planted click.py ran."""
    (tmp_path / "click.py").write_text(f"open({str(tmp_path / 'owned')!r}, 'w').write('x')\nraise SystemExit(9)\n")
    (tmp_path / "perfci").mkdir()
    (tmp_path / "perfci" / "__init__.py").write_text("raise SystemExit(9)\n")
    done = subprocess.run(["bash", str(REPO / "scripts" / "perfci"), "--version"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"})
    assert done.returncode == 0 and "perfci" in done.stdout, done.stderr
    assert not (tmp_path / "owned").exists()


@pytest.mark.e2e  # not `alone`: it compares work per transaction, never speed (2 rounds judge no throughput)
def test_a_change_of_perfci_itself_is_checked_base_perfci_against_head_perfci_in_rounds(real_server_tools, tmp_path):
    """perfci's own repository (its tracked files, committed) with a PR that edits a
    comment under ci/: `perfci pr-check scenarios --perfci-itself` runs the base commit's
    perfci (a worktree) and the checkout's in alternating rounds of a tiny fixed-work
    scenario on the local MariaDB; the same code does the same work."""
    repo = tracked_copy(tmp_path / "perfci")
    write_tiny(repo / "scenarios", time=120, transactions=3000)  # fixed work: the count ends the phase
    git(repo, "init", "-q")
    base = commit(repo, "base")
    util = repo / "ci" / "perfci" / "util" / "__init__.py"
    util.write_text(util.read_text() + "# a comment\n")
    commit(repo, "a comment")
    done = subprocess.run(["bash", str(repo / "scripts" / "perfci"), "pr-check", "scenarios", "--base", base,
                           "--perfci-itself", "--harness-scenario", "tiny", "--harness-rounds", "2"], cwd=repo,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, **SOURCE_ENV, "PYTHONPATH": str(repo / "ci"),
                               "PERFCI_CACHE": str(tmp_path / "cache"), "PERFCI_ALLOW_BUSY": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    worktree = [line for line in done.stderr.splitlines() if line.startswith("== round")]
    assert [line.split(" (")[0] for line in worktree] == ["== round 1 of 2: a", "== round 1 of 2: b",
                                                          "== round 2 of 2: b", "== round 2 of 2: a"]
    assert worktree[1].endswith(f"({repo})")
    text = (repo / "pr-report" / "ab-harness.md").read_text()
    assert "**Harness unchanged**: the same work in every round" in text and "throughput not judged (2 rounds" in text
    typed = json.loads((repo / "pr-report" / "ab-harness.json").read_text())  # what the PR comment reads
    assert typed["check"] == "harness" and typed["outcome"] == "unchanged"
    assert git(repo, "worktree", "list").count("\n") == 0  # the base's worktree is gone


def test_a_check_of_several_abs_shares_its_level_over_them_and_says_so(tmp_path, monkeypatch):
    """#55 item 4: a PR check is a test too. Its A/Bs run at the check's 0.5 % shared
    equally (each `perfci ab` child gets PERFCI_AB_LEVEL), and the job summary says the
    level before the first report; one A/B keeps the whole 0.5 %."""
    import sys
    fake = tmp_path / "fake_perfci.py"  # stands for `perfci ab`: writes the level it was given as its report
    fake.write_text("import os, sys\nargs = sys.argv[1:]\n"
                    "open(args[args.index('--report') + 1], 'w').write(os.environ['PERFCI_AB_LEVEL'])\n")
    monkeypatch.setattr(pr_check, "perfci_argv", lambda tool=None: [sys.executable, str(fake)])
    assert pr_check.check_level(1) == (0.005, pr_check.check_level(1)[1])
    each, said = pr_check.check_level(4)
    assert each == pytest.approx(0.00125) and said.startswith(
        "This check's level: 4 A/Bs, each at 0.125% (interleaved: family-wise over its judged metrics and looks), "
        "so a pull request that changes nothing fails it with a chance of at most 0.5%")
    run = CheckRun(tmp_path / "reports", tmp_path / "out", tmp_path / "summary.md")
    run.report_dir.mkdir()
    planned = [PlannedAb(f"s{i}", f"s{i}", ("tiny",)) for i in range(4)]
    assert pr_check.run_abs(planned, run, tmp_path, dict(os.environ)) == 0
    assert [float(run.report(f"s{i}").read_text()) for i in range(4)] == [pytest.approx(0.00125)] * 4
    summary = run.summary.read_text()
    assert summary.startswith("This check's level: 4 A/Bs, each at 0.125%") and summary.count("0.00125") == 4
