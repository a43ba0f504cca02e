"""`perfci init`: a team's project, usable at once (perfci finds it, its servers.yaml
and scenarios load, its workflow lints), and never written over."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from conftest import actionlint, run_perfci

REF = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.slow
def test_init_writes_a_project_perfci_can_use_and_a_workflow_pinned_by_commit(tmp_path):
    team = tmp_path / "team"
    made = run_perfci("init", str(team), "--perfci-repository", "acme/perfci", "--perfci-ref", REF)
    assert made.returncode == 0, made.stderr
    workflow = yaml.safe_load((team / ".github/workflows/nightly.yml").read_text())
    [(name, job)] = workflow["jobs"].items()
    assert job["uses"] == f"acme/perfci/.github/workflows/perfci-nightly.yml@{REF}"
    assert job["with"]["perfci-repository"] == "acme/perfci" and job["with"]["perfci-ref"] == REF
    assert workflow["permissions"] == {"contents": "read"}
    pr = yaml.safe_load((team / ".github/workflows/pr-checks.yml").read_text())
    assert pr["jobs"]["perf"]["uses"] == f"acme/perfci/.github/workflows/perfci-pr.yml@{REF}"
    bisect = yaml.safe_load((team / ".github/workflows/bisect.yml").read_text())
    assert bisect["jobs"]["bisect"]["uses"] == f"acme/perfci/.github/workflows/perfci-bisect.yml@{REF}"
    assert bisect["jobs"]["bisect"]["with"]["good"] == "${{ inputs.good }}"
    comment = yaml.safe_load((team / ".github/workflows/pr-comment.yml").read_text())
    assert comment["jobs"]["comment"]["uses"] == f"acme/perfci/.github/workflows/perfci-pr-comment.yml@{REF}"
    assert comment["jobs"]["comment"]["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    lint = subprocess.run([actionlint(), ".github/workflows/nightly.yml", ".github/workflows/pr-checks.yml",
                           ".github/workflows/bisect.yml", ".github/workflows/pr-comment.yml"],
                          cwd=team, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    env = {"PERFCI_ROOT": ""}
    listed = run_perfci("list", cwd=team, env=env)
    assert listed.returncode == 0 and listed.stdout.startswith("rebuild-after-delete"), listed.stderr
    assert run_perfci("validate", cwd=team, env=env).returncode == 0
    servers = run_perfci("servers", "list", cwd=team, env=env)
    assert servers.returncode == 0 and servers.stdout.startswith("mariadb-10.11  nightly"), servers.stdout


@pytest.mark.slow
def test_init_refuses_what_would_move_or_overwrite(tmp_path):
    for args, needle in ((["--perfci-repository", "acme"], "--perfci-repository 'acme': expected OWNER/NAME"),
                         (["--perfci-repository", "acme/perfci", "--perfci-ref", "v1.0"],
                          "--perfci-ref 'v1.0': a full 40-character commit SHA is needed"),
                         (["--perfci-repository", "acme/perfci", "--perfci-ref", REF, "--scenario", "nope"], "nope")):
        proc = run_perfci("init", str(tmp_path / "a"), *args)
        assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    team = tmp_path / "team"
    (team / "scenarios").mkdir(parents=True)
    (team / "servers.yaml").write_text("servers: []\n")
    proc = run_perfci("init", str(team), "--perfci-repository", "acme/perfci", "--perfci-ref", REF)
    assert proc.returncode == 2 and "already has servers.yaml: nothing was written" in proc.stderr
    assert sorted(p.name for p in team.iterdir()) == ["scenarios", "servers.yaml"]
    assert (team / "servers.yaml").read_text() == "servers: []\n"
