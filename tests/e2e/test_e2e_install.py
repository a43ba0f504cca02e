"""perfci as a user installs it: `pip install .` (not editable) into a fresh venv,
then used from a project checkout and from outside any project (the checkout route on the
stock Debian python3: test_e2e_quickstart.py)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from perfci.alert.pr_comment import body, load_reports
from perfci.model.verdicts import Outcome

from conftest import REPO, documented_lines, write_tiny

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(installed_perfci):
    return installed_perfci


def perfci(installed, *args, cwd):
    exe, env = installed
    return subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


def test_the_installed_package_is_not_the_checkout(installed, tmp_path):
    exe, env = installed
    where = subprocess.run([str(exe.parent / "python"), "-c", "import perfci; print(perfci.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, env=env).stdout.strip()
    assert "site-packages" in where and not where.startswith(str(REPO))


def test_installed_perfci_finds_the_projects_scenarios(installed, tmp_path):
    """From inside a project (here: a subdirectory of this checkout) the installed perfci
    lists and validates the project's scenarios, not the ones it ships (the smoke run of a
    project scenario is quickstart's, below; a run of the installed package, outside)."""
    listed = perfci(installed, "list", cwd=REPO / "tests")  # the project is found upward
    assert listed.returncode == 0 and "rebuild-after-delete" in listed.stdout and "change-buffer-matrix" in listed.stdout
    validated = perfci(installed, "validate", cwd=REPO / "tests")
    assert validated.returncode == 0, validated.stderr
    assert f"ok    {REPO / 'scenarios' / 'rebuild-after-delete.yaml'}" in validated.stdout, validated.stdout


def test_outside_a_project_the_shipped_scenarios_are_used(installed, tmp_path):
    listed = perfci(installed, "list", cwd=tmp_path)
    assert listed.returncode == 0 and "rebuild-after-delete" in listed.stdout
    scenario = write_tiny(tmp_path)
    proc = perfci(installed, "run", str(scenario), "--out", str(tmp_path / "out"), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert result["schema"] == "perfci.result/2" and result["status"] == "ok"
    assert result["harness"]["perfci"] and "numpy" in result["harness"]["dependencies"]


@pytest.mark.alone  # its night and PR check judge real runs
def test_a_project_made_by_the_installed_perfci_runs_its_nightly_and_pr_check_under_act_as_documented(installed, tmp_path):
    """A new team's afternoon: perfci installed by the venv route, `perfci init` in an
    empty directory outside any checkout (the package's own scenarios and templates),
    then docs/adopting.md's dry-run commands as written, in the project: the first night
    (no baseline, no history: no issue; the night on the local results branch; the
    dashboard) and the PR check of a branch (validated, its changed scenario A/B'd)."""
    exe, env = installed
    env = {**env, "PERFCI_CHECKOUT": str(REPO), "PERFCI_EXPLAIN": "never"}
    ref = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    made = perfci(installed, "init", "perf-scenarios", "--perfci-repository", "perfci-org/perfci", "--perfci-ref", ref,
                  "--no-interactive", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "perf-scenarios"
    assert (project / ".github/workflows/perf-approval.yml").exists()
    (project / "scenarios" / "rebuild-after-delete.yaml").unlink()
    scenario = write_tiny(project / "scenarios")  # the workflow is under test here, not the scenario

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "perfci init")
    [nightly] = documented_lines("A dry run on your machine", "perfci act nightly")
    [pr_check] = documented_lines("A dry run on your machine", "perfci act pr-checks")
    night = subprocess.run(["bash", "-euc", nightly], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert night.returncode == 0, night.stdout[-4000:] + night.stderr[-2000:]
    work = project / ".perfci-act"
    assert not (work / "issues").exists() and (work / "site" / "index.html").exists()
    listing = subprocess.run(["git", "--git-dir", str(work / "results.git"), "ls-tree", "-r", "--name-only", "results"],
                             capture_output=True, text=True).stdout.split()
    assert any(p.startswith("history/epyc-nvme/mariadb-10.11/tiny/smoke/") for p in listing), listing

    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(origin)], check=True)
    git("remote", "add", "origin", str(origin))
    git("push", "-q", "origin", "main")
    git("checkout", "-q", "-b", "words")
    scenario.write_text(scenario.read_text().replace("tiny scenario for tests", "a tiny scenario, described"))
    git("commit", "-qam", "describe it")
    check = subprocess.run(["bash", "-euc", pr_check], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]
    assert "Validate the scenarios" in check.stdout and "Smoke A/B on the benchmark runner" in check.stdout
    assert "🏁  Job succeeded" in check.stdout and "Job failed" not in check.stdout
    # what the sticky comment is built from: the A/B's typed verdict beside its report
    [report] = load_reports([work / "artifacts" / "pr-report" / "ab-tiny.md"])
    assert report.outcome in (Outcome.UNCHANGED, Outcome.INCONCLUSIVE) and not report.regressed
    first = body([report], "0" * 40, accepted=False).splitlines()[1]
    # (the tiny scenario's phase is time-boxed: `--mode auto` A/Bs it in rounds, which state no MDE)
    assert re.fullmatch(r"### perfci: (✅ \*\*No change beyond [\d.]+ %\*\*: every judged metric within its "
                        r"tolerance|✅ \*\*No change\*\* beyond the tolerance|⚪ \*\*No regression found\*\*, not "
                        r"every metric conclusive(: could not see changes below [\d.]+ %| \(see each A/B's smallest "
                        r"detectable change\)))", first), first
