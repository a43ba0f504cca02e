"""The server-code PR check's workflows without a server: `perfci init --server-code` writes
the workflows a team's server repository adds (pinned, linted, upgraded like a project's).
`perfci pr-check server-code`'s refusals: tests/sessions/test_pr_check.py; built and A/B'd
for real under act: tests/e2e/test_e2e_act.py."""

from __future__ import annotations

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
