"""The team project's servers.yaml bump under `act` (tests/team_act.py): the PR check A/Bs
the base spec against the head spec. Not `alone`: it holds the wiring (both builds named,
the exit the typed verdict's), not an effect, so it runs beside the other end-to-end
modules, its A/B --allow-busy (PERFCI_ALLOW_BUSY, which `act` hands to the jobs when
scripts/check sets it; on a busy host the interleaved A/B drops its busy pairs and its
typed verdict says what it could judge). The scenario PR that regresses is judged on a
quiet host: test_e2e_act.py."""

from __future__ import annotations

import pytest
import yaml

from perfci.alert.pr_comment import load_reports

from conftest import REPO, write_tiny
from team_act import act, commit, published, pull_request, team_project

pytestmark = pytest.mark.e2e


def test_a_team_projects_servers_yaml_bump_is_ab_d_base_spec_against_head_spec(fetched_servers, tmp_path):
    """A PR that moves the team's `mysql` id from MySQL 8.0.15's jar to 8.0.31's: the PR
    check A/Bs the base spec (A) against the head spec (B) on the scenario the repository
    variable PERFCI_PR_SERVER_SCENARIOS names, the report names both builds, and the
    check passes or fails as that report's verdict says."""
    cache, _ = fetched_servers
    pinned = {e["id"]: e["spec"] for e in yaml.safe_load((REPO / "servers.yaml").read_text())["servers"]}
    team, ref = team_project(tmp_path)
    # half the other A/Bs' work: this test holds the wiring (both builds named, the exit the
    # typed verdict's), not an effect
    write_tiny(team / "scenarios", name="tiny", time=60, transactions=2000, burst=200)
    servers = team / "servers.yaml"
    servers.write_text(servers.read_text() + f"  - id: mysql\n    spec: {pinned['mysql-8.0.15']}\n")
    base = commit(team, "a tiny scenario, MySQL 8.0.15")
    published(team, tmp_path, "bump")
    servers.write_text(servers.read_text().replace(pinned["mysql-8.0.15"], pinned["mysql-8.0.31"]))
    head = commit(team, "MySQL 8.0.31")
    proc = act(team, "pull_request", "pr-checks.yml", pull_request(9, "opened", base, head, "bump"), ref, tmp_path,
               env={"PERFCI_CACHE": cache["PERFCI_CACHE"]}, variables={"PERFCI_PR_SERVER_SCENARIOS": "tiny"})
    report = tmp_path / "artifacts" / "pr-report" / "ab-server-mysql-tiny.md"
    assert report.exists(), proc.stdout[-4000:]
    text = report.read_text()
    assert f"A: `{pinned['mysql-8.0.15']}` (mysql 8.0.15" in text and "(mysql 8.0.31" in text, text[:2000]
    assert [p.name for p in report.parent.glob("ab-*.md")] == [report.name]  # the scenario itself did not change
    [typed] = load_reports([report])  # the typed verdict beside the report decides
    regressed = typed.regressed
    assert (proc.returncode != 0) == regressed, proc.stdout[-4000:]
    assert ("perfci: B regressed in mysql on tiny" in proc.stdout) == regressed
