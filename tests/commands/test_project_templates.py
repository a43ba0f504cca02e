"""One set of templates for every project's workflows: perfci's own callers are what
the templates render for perfci itself, a team's carry its runner and pins, and the
pins of a project agree (an upgrade moves all of them; a half-done one is named)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from perfci.commands.init_cmd import upgrade
from perfci.commands.project_files import (
    OWN_WORKFLOWS,
    Caller,
    own_workflows,
    pin_disagreements,
    project_files,
    project_pins,
    render,
)
from perfci.util.errors import BadInput

from conftest import PERFCI, REPO, SOURCE_ENV, actionlint, run_perfci

REF = "0123456789abcdef0123456789abcdef01234567"
NEW = "89abcdef0123456789abcdef0123456789abcdef"


def test_perfcis_own_callers_are_the_templates_rendered_for_perfci():
    for path, text in own_workflows().items():
        assert (REPO / path).read_text() == text, (
            f"{path} differs from its template: edit ci/perfci/commands/project_templates/ and run "
            "scripts/python -c 'from pathlib import Path; from perfci.commands.project_files import "
            "write_own_workflows as w; w(Path(\".\"))'")
    assert len(OWN_WORKFLOWS) == 4


def test_a_teams_workflows_carry_its_runner_its_pins_and_a_private_perfcis_token(tmp_path):
    caller = Caller("acme/perfci", REF, ("self-hosted", "bench-7"), "c7-nvme", private=True).check()
    files = project_files(caller, "tiny")
    nightly = yaml.safe_load(files[".github/workflows/nightly.yml"])["jobs"]["nightly"]
    assert nightly["uses"] == f"acme/perfci/.github/workflows/perfci-nightly.yml@{REF}"
    assert nightly["with"]["runner-labels"] == '["self-hosted", "bench-7"]'
    assert nightly["with"]["runner-class"] == "c7-nvme" and nightly["with"]["perfci-ref"] == REF
    assert nightly["secrets"] == {"perfci-token": "${{ secrets.PERFCI_TOKEN }}",
                                  "webhook-url": "${{ secrets.PERFCI_WEBHOOK_URL }}"}
    for name in ("pr-checks.yml", "pr-comment.yml", "bisect.yml"):
        job = next(iter(yaml.safe_load(files[f".github/workflows/{name}"])["jobs"].values()))
        assert job["with"]["perfci-ref"] == REF and job["secrets"]["perfci-token"], name
    approval = yaml.safe_load(files[".github/workflows/perf-approval.yml"])
    assert approval["jobs"]["revoke"]["permissions"] == {"pull-requests": "write"}
    assert "c7-nvme" in files["README.md"] and "perfci init --upgrade" in files["README.md"]
    public = project_files(Caller("acme/perfci", REF), "tiny")
    assert "PERFCI_TOKEN" not in public[".github/workflows/nightly.yml"]
    assert "PERFCI_TOKEN" not in public[".github/workflows/bisect.yml"]
    assert yaml.safe_load(public[".github/workflows/nightly.yml"])["jobs"]["nightly"]["secrets"] == {
        "webhook-url": "${{ secrets.PERFCI_WEBHOOK_URL }}"}  # the chat webhook: a secret of the team's, optional
    assert yaml.safe_load(public[".github/workflows/nightly.yml"])["jobs"]["nightly"]["with"]["runner-class"] == "epyc-nvme"
    # what the reusable workflows declare is what the callers pass
    for name, reusable in (("nightly.yml", "perfci-nightly.yml"), ("bisect.yml", "perfci-bisect.yml"),
                           ("pr-checks.yml", "perfci-pr.yml"), ("pr-comment.yml", "perfci-pr-comment.yml")):
        call = yaml.safe_load((REPO / ".github/workflows" / reusable).read_text())[True]["workflow_call"]
        job = next(iter(yaml.safe_load(files[f".github/workflows/{name}"])["jobs"].values()))
        assert set(job["with"]) <= set(call["inputs"]), name
        assert set(job["secrets"]) <= set(call["secrets"]), name


@pytest.mark.slow
def test_a_teams_generated_workflows_pass_actionlint(tmp_path):
    caller = Caller("acme/perfci", REF, ("self-hosted", "bench-7"), "c7-nvme", private=True)
    for path, text in project_files(caller, "tiny").items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    lint = subprocess.run([actionlint()], cwd=tmp_path, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_templates_refuse_what_would_break_a_workflow():
    for caller, needle in ((Caller("acme", REF), "expected OWNER/NAME"), (Caller("a/b", "v1"), "a full 40-character"),
                           (Caller("a/b", REF, ("self-hosted", "x y")), "--runner-labels"),
                           (Caller("a/b", REF, runner_class="Big Box"), "--runner-class")):
        with pytest.raises(BadInput, match=needle):
            caller.check()
    with pytest.raises(AssertionError, match="unrendered"):
        render("x: @nope@\n", Caller("a/b", REF))


def written(tmp_path, caller: Caller):
    for path, text in project_files(caller, "tiny").items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return tmp_path


def test_an_upgrade_moves_every_pin_and_nothing_else(tmp_path):
    project = written(tmp_path, Caller("acme/perfci", REF))
    before = {p: p.read_text() for p in (project / ".github/workflows").iterdir()}
    assert len(project_pins(project)) == 8 and pin_disagreements(project_pins(project)) == []
    changed = upgrade(project, NEW)
    assert changed == [".github/workflows/bisect.yml", ".github/workflows/nightly.yml", ".github/workflows/pr-checks.yml",
                       ".github/workflows/pr-comment.yml"]
    assert {p.sha for p in project_pins(project)} == {NEW}
    for path, text in before.items():
        assert path.read_text() == text.replace(REF, NEW)
    assert upgrade(project, NEW) == []
    with pytest.raises(BadInput, match="a full 40-character commit SHA"):
        upgrade(project, "main")
    with pytest.raises(BadInput, match="no perfci pin"):
        upgrade(tmp_path / "elsewhere", NEW)


def test_pins_that_disagree_are_named_by_file_and_line(tmp_path):
    project = written(tmp_path, Caller("acme/perfci", REF))
    bisect = project / ".github/workflows/bisect.yml"
    bisect.write_text(bisect.read_text().replace(f"perfci-ref: {REF}", f"perfci-ref: {NEW}"))
    [problem] = pin_disagreements(project_pins(project))
    line = next(i for i, t in enumerate(bisect.read_text().splitlines(), 1) if NEW in t)
    assert f"{NEW[:12]} at bisect.yml:{line}" in problem and "perfci init --upgrade SHA" in problem
    bisect.write_text(bisect.read_text().replace(f"perfci-ref: {NEW}", "perfci-ref: main"))
    assert any("'main' is not a full commit SHA" in p for p in pin_disagreements(project_pins(project)))
    assert pin_disagreements(project_pins(REPO)) == [] and project_pins(REPO) == []  # perfci's own: no pins


@pytest.mark.slow
def test_validate_and_doctor_fail_on_a_half_done_upgrade(tmp_path):
    project = written(tmp_path, Caller("acme/perfci", REF))
    (project / "scenarios").mkdir()
    nightly = project / ".github/workflows/nightly.yml"
    nightly.write_text(nightly.read_text().replace(f"@{REF}", f"@{NEW}"))
    validated = run_perfci("validate", cwd=project, env={"PERFCI_ROOT": ""})
    assert validated.returncode == 2 and "the workflows pin 2 perfci commits" in validated.stderr, validated.stderr
    doctor = run_perfci("doctor", "--json", cwd=project, env={"PERFCI_ROOT": ""})
    [pins] = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "perfci pins"]
    assert pins["status"] == "fail" and pins["fix"] == "perfci init --upgrade SHA" and doctor.returncode == 3
    upgraded = run_perfci("init", "--upgrade", NEW, str(project), cwd=project, env={"PERFCI_ROOT": ""})
    assert upgraded.returncode == 0 and "every perfci pin agrees" in upgraded.stdout, upgraded.stderr
    assert run_perfci("validate", cwd=project, env={"PERFCI_ROOT": ""}).returncode == 0


@pytest.mark.slow
def test_init_asks_on_a_terminal_for_what_differs_between_teams(tmp_path):
    """--interactive (what a terminal gets by default): the answers land in the workflows."""
    answers = "acme/perfci\n" + REF + "\nself-hosted,bench\nc7\ny\n"
    proc = subprocess.run([*PERFCI, "init", str(tmp_path / "team"), "--interactive"],
                          input=answers, capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, **SOURCE_ENV})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nightly = yaml.safe_load((tmp_path / "team/.github/workflows/nightly.yml").read_text())["jobs"]["nightly"]
    assert nightly["with"]["runner-labels"] == '["self-hosted", "bench"]' and nightly["with"]["runner-class"] == "c7"
    assert "secrets" in nightly and "PERFCI_TOKEN" in proc.stdout
    none = run_perfci("init", str(tmp_path / "other"), "--no-interactive", cwd=tmp_path)
    assert none.returncode == 2 and "--perfci-repository OWNER/NAME is needed" in none.stderr
