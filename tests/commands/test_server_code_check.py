"""The server-code PR check's pieces without a server: `perfci init --server-code` writes
the workflows a team's server repository adds (pinned, linted, upgraded like a project's),
and scripts/pr-server-code-ab, started with bash as the workflow starts it, refuses bad
input (2) and a failed build (3) before anything is measured. Under act, built and A/B'd
for real: tests/e2e/test_e2e_act.py."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from conftest import REPO, actionlint, run_perfci

REF = "0123456789abcdef0123456789abcdef01234567"
NEW = "89abcdef0123456789abcdef0123456789abcdef"


def server_repository(tmp_path):
    repo = tmp_path / "server"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "perf").mkdir()
    (repo / "perf" / "hot.yaml").write_text((REPO / "scenarios" / "microbench.yaml").read_text())
    return repo


@pytest.mark.slow
def test_init_server_code_writes_a_pinned_check_its_comment_and_the_fork_approval(tmp_path):
    repo = server_repository(tmp_path)
    made = run_perfci("init", str(repo), "--server-code", "mariadb", "--scenario", "perf/hot.yaml", "--scenario",
                      "microbench", "--phase", "full-scan", "--perfci-repository", "acme/perfci", "--perfci-ref", REF,
                      "--runner-labels", "self-hosted,db-perf", "--private", "--no-interactive")
    assert made.returncode == 0, made.stderr
    flows = repo / ".github" / "workflows"
    assert sorted(p.name for p in flows.iterdir()) == ["perf-approval.yml", "perf-pr-checks.yml", "perf-pr-comment.yml"]
    check = yaml.safe_load((flows / "perf-pr-checks.yml").read_text())
    assert check["name"] == "perf-pr-checks"
    job = check["jobs"]["perf"]
    assert job["uses"] == f"acme/perfci/.github/workflows/perfci-server-pr.yml@{REF}"
    assert job["with"] == {"flavor": "mariadb", "scenarios": "perf/hot.yaml microbench", "phases": "full-scan",
                           "measure": "auto", "perfci-repository": "acme/perfci", "perfci-ref": REF,
                           "runner-labels": '["self-hosted", "db-perf"]'}
    assert job["secrets"] == {"perfci-token": "${{ secrets.PERFCI_TOKEN }}"}
    triggers = check[True] if True in check else check["on"]
    assert triggers == {"pull_request": {"types": ["opened", "synchronize", "reopened", "labeled"]}}
    comment = yaml.safe_load((flows / "perf-pr-comment.yml").read_text())
    triggers = comment[True] if True in comment else comment["on"]
    assert triggers["workflow_run"]["workflows"] == ["perf-pr-checks"]  # the check it comments on
    assert comment["jobs"]["comment"]["uses"] == f"acme/perfci/.github/workflows/perfci-pr-comment.yml@{REF}"
    lint = subprocess.run([actionlint(), *map(str, sorted(flows.iterdir()))], cwd=repo, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # one upgrade command moves its pins like a project's
    upgraded = run_perfci("init", "--upgrade", NEW, str(repo))
    assert upgraded.returncode == 0 and "every perfci pin agrees" in upgraded.stdout, upgraded.stderr
    assert REF not in "".join(p.read_text() for p in flows.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("args, needle", [
    (["--scenario", "nope"], "unknown scenario 'nope'"),
    (["--scenario", "../outside.yaml"], "--scenario '../outside.yaml': a name perfci ships or a path in"),
    (["--phase", "full scan"], "--phase 'full scan': letters, digits"),
])
def test_init_server_code_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, args, needle):
    repo = server_repository(tmp_path)
    proc = run_perfci("init", str(repo), "--server-code", "mariadb", "--perfci-repository", "acme/perfci",
                      "--perfci-ref", REF, *args)
    assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (repo / ".github").exists()


@pytest.mark.slow
def test_init_server_code_needs_the_repository_and_never_writes_over_it(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = run_perfci("init", str(plain), "--server-code", "mysql", "--perfci-repository", "acme/perfci",
                      "--perfci-ref", REF)
    assert proc.returncode == 2 and "is not a git checkout" in proc.stderr
    repo = server_repository(tmp_path)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "perf-approval.yml").write_text("theirs\n")
    proc = run_perfci("init", str(repo), "--server-code", "mysql", "--perfci-repository", "acme/perfci",
                      "--perfci-ref", REF)
    assert proc.returncode == 2 and "already has .github/workflows/perf-approval.yml" in proc.stderr
    assert [p.name for p in (repo / ".github" / "workflows").iterdir()] == ["perf-approval.yml"]
    proc = run_perfci("init", str(tmp_path / "p"), "--phase", "x", "--perfci-repository", "acme/perfci",
                      "--perfci-ref", REF)
    assert proc.returncode == 2 and "--phase goes with --server-code" in proc.stderr


def run_script(tmp_path, *args, build_exit=0, sandbox="64201:64201"):
    """scripts/pr-server-code-ab as the workflow step starts it (bash), beside a stand-in
    build-server and perfci that record their calls (and the cache paths build-server
    would take from its environment)."""
    tool = tmp_path / "tool"
    (tool / "scripts").mkdir(parents=True, exist_ok=True)
    for name in ("pr-server-code-ab", "step-signals.sh"):
        (tool / "scripts" / name).write_text((REPO / "scripts" / name).read_text())
    for name, code in (("build-server", build_exit), ("perfci", 0)):
        (tool / "scripts" / name).write_text(
            f'#!/bin/sh\necho "{name} $*" >> "{tmp_path}/calls"\n'
            f'echo "${{CCACHE_DIR:-}}${{PERFCI_BUILD_CACHE:-}}${{PERFCI_SRC_CACHE:-}}" >> "{tmp_path}/env"\nexit {code}\n')
        (tool / "scripts" / name).chmod(0o755)
    env = {**os.environ, "PERFCI_SANDBOX_USER": sandbox, "CCACHE_DIR": "/trusted/ccache",
           "PERFCI_BUILD_CACHE": "/trusted/builds", "PERFCI_SRC_CACHE": "/trusted/src"}
    return subprocess.run(["bash", str(tool / "scripts" / "pr-server-code-ab"), *args], cwd=tmp_path,
                          capture_output=True, text=True, env=env)


def test_a_pull_requests_code_is_built_only_in_the_sandbox_and_only_in_the_jobs_caches(tmp_path):
    """Removed once: without the sandbox check the builds ran; without the unset they saw /trusted."""
    proc = run_script(tmp_path, "mariadb", "0" * 40, "1" * 40, str(tmp_path), "microbench", sandbox="")
    assert proc.returncode == 3 and "no sandbox account (PERFCI_SANDBOX_USER)" in proc.stderr, proc.stderr
    assert not (tmp_path / "calls").exists()
    proc = run_script(tmp_path, "mariadb", "0" * 40, "1" * 40, str(tmp_path), "microbench")
    assert proc.returncode == 0, proc.stderr
    assert set((tmp_path / "env").read_text().splitlines()) == {""}


@pytest.mark.parametrize("args, needle", [
    (["maria", "0" * 40, "1" * 40, ".", "microbench"], "flavor 'maria': allowed: mysql, percona, mariadb"),
    (["mariadb", "main", "1" * 40, ".", "microbench"], "commit 'main': a full 40-character SHA is needed"),
    (["mariadb", "0" * 40, "1" * 40, ".", "  "], "scenarios: name at least one"),
    (["mariadb", "0" * 40, "1" * 40, ".", "microbench", "full;scan"], "phase 'full;scan'"),
    (["mariadb", "0" * 40], "usage: "),
])
def test_the_server_code_ab_script_refuses_bad_input_before_building(tmp_path, args, needle):
    proc = run_script(tmp_path, *args)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "calls").exists()


def test_a_failed_build_is_an_infrastructure_failure_and_nothing_is_measured(tmp_path):
    proc = run_script(tmp_path, "mariadb", "0" * 40, "1" * 40, str(tmp_path), "microbench", build_exit=3)
    assert proc.returncode == 3 and f"build of {'0' * 40} failed (exit 3)" in proc.stderr, proc.stderr
    assert (tmp_path / "calls").read_text().splitlines() == [f"build-server mariadb {'0' * 40}"]


def test_both_commits_are_built_from_the_teams_checkout_then_each_scenario_ab_d(tmp_path):
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "hot.yaml").write_text("name: hot\n")
    proc = run_script(tmp_path, "mariadb", "0" * 40, "1" * 40, str(tmp_path), "perf/hot.yaml microbench", "a b")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[:2] == [f"build-server mariadb {'0' * 40}", f"build-server mariadb {'1' * 40}"]
    spec = f"--a build:mariadb@{'0' * 40} --b build:mariadb@{'1' * 40} --profile smoke --mode auto --phase a --phase b"
    assert calls[2:] == [f"perfci ab {tmp_path}/perf/hot.yaml {spec} --report ab-hot.md --json ab-hot.json --out results",
                         f"perfci ab microbench {spec} --report ab-microbench.md --json ab-microbench.json --out results"]
