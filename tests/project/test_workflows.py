"""The workflows: linted by actionlint and zizmor, and never running fork code on
self-hosted runners."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from perfci.commands import options

from conftest import REPO, actionlint

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def test_actionlint_passes():
    proc = subprocess.run([actionlint()], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_passes():
    if not shutil.which("zizmor"):
        pytest.skip("needs zizmor (pip install zizmor; scripts/install-deps does)")
    proc = subprocess.run(["zizmor", "--offline", "--pedantic", ".github/"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _jobs(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["jobs"]


def _self_hosted(job: dict) -> bool:
    runs_on = job.get("runs-on")
    if runs_on == "${{ fromJSON(inputs.runner-labels) }}":
        return True  # the caller's benchmark runner (a reusable workflow's input)
    return "self-hosted" in (runs_on if isinstance(runs_on, list) else [runs_on])


def test_pr_workflow_never_runs_fork_code_on_self_hosted_runners():
    doc = yaml.safe_load((REPO / ".github/workflows/pr-checks.yml").read_text())
    triggers = doc[True] if True in doc else doc["on"]  # YAML 1.1 reads `on` as a boolean
    assert "pull_request_target" not in triggers  # that would run with secrets on fork code
    assert "labeled" in triggers["pull_request"]["types"]  # the approval arrives as a label event
    assert not any(_self_hosted(job) for job in doc["jobs"].values())  # the self-hosted job is perfci-pr.yml's
    assert doc["jobs"]["perf"]["uses"] == "./.github/workflows/perfci-pr.yml"
    reusable = yaml.safe_load((REPO / ".github/workflows/perfci-pr.yml").read_text())
    assert [n for n, job in reusable["jobs"].items() if _self_hosted(job)] == ["smoke-ab"]
    server_code = yaml.safe_load((REPO / ".github/workflows/perfci-server-pr.yml").read_text())
    assert [n for n, job in server_code["jobs"].items() if _self_hosted(job)] == ["build-ab"]
    for name, job in [*reusable["jobs"].items(), *server_code["jobs"].items()]:
        if _self_hosted(job):
            condition = " ".join(job.get("if", "").split())
            # a branch of this repository, or the event of a label only maintainers (write access)
            # can set: a label left on from an earlier commit does not admit a later push
            assert condition == ("(github.event.pull_request.head.repo.full_name == github.repository && "
                                 "github.event.action != 'labeled' && "
                                 "github.event.pull_request.user.login != 'dependabot[bot]') || "
                                 "(github.event.action == 'labeled' && github.event.label.name == 'run-perf') || "
                                 "(github.event.action == 'labeled' && github.event.label.name == 'perf-expected' && "
                                 "github.event.pull_request.head.repo.full_name == github.repository && "
                                 "github.event.pull_request.user.login != 'dependabot[bot]')"), name


def test_every_workflow_is_least_privilege_and_pinned():
    for path in WORKFLOWS:
        doc = yaml.safe_load(path.read_text())
        assert doc.get("permissions") == {"contents": "read"}, path.name
        for name, job in doc["jobs"].items():
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                if uses and not uses.startswith("./"):
                    ref = uses.split("@", 1)[1]
                    assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), f"{path.name}:{name}: {uses}"
                if uses.startswith("actions/checkout") and step.get("with", {}).get("persist-credentials") is not False:
                    # only a job that must push may keep credentials, and never on a self-hosted runner
                    assert job.get("permissions", {}).get("contents") == "write", f"{path.name}:{name}"
                    assert not _self_hosted(job), f"{path.name}:{name}"


def _step_script(workflow: str, job: str, step: str) -> str:
    steps = _jobs(REPO / ".github" / "workflows" / workflow)[job]["steps"]
    return next(s["run"] for s in steps if s.get("name", "").startswith(step))


SERVER_PR_ENV = {"FLAVOR": "mariadb", "HEAD_SHA": "1" * 40, "SCENARIOS": "x microbench", "PHASES": "",
                 "PERFCI_SERVER_MIRROR": "/var/lib/perfci-pr/src/server-pr-mirror.git",
                 "PR_NUMBER": "7", "FORK": "false", "PERFCI_SANDBOX_USER": "perfci-sandbox"}  # the runner's .env (runner-bootstrap)


def test_the_nightly_counts_work_only_where_a_counter_is_chosen():
    [step] = [s for s in _jobs(REPO / ".github" / "workflows" / "perfci-nightly.yml")["bench"]["steps"]
              if s.get("name", "").startswith("Count the scenario's work")]
    assert step["if"] == "${{ env.PERFCI_WORK_COUNTER != '' }}"
    env = _jobs(REPO / ".github" / "workflows" / "perfci-nightly.yml")["bench"]["env"]
    assert env["PERFCI_WORK_COUNTER"] == "${{ inputs.work-counter || vars.PERFCI_WORK_COUNTER || '' }}"


def test_the_server_code_check_judges_counted_work_first_where_the_runner_can_count():
    """perfci ab reads PERFCI_MEASURE (`auto`: both where valgrind or a PMU is, else time):
    the reusable check passes its `measure` input, `auto` unless the caller says otherwise."""
    flow = yaml.safe_load((REPO / ".github" / "workflows" / "perfci-server-pr.yml").read_text())
    triggers = flow[True] if True in flow else flow["on"]
    assert triggers["workflow_call"]["inputs"]["measure"]["default"] == "auto"
    [step] = [s for s in flow["jobs"]["build-ab"]["steps"] if s.get("name", "").startswith("Build base and head")]
    assert step["env"]["PERFCI_MEASURE"] == "${{ inputs.measure }}"
    assert options.measure(lambda: None).__click_params__[0].envvar == "PERFCI_MEASURE"


COUNTED_NIGHT_ENV = {"SCENARIO": "x", "PROFILE": "nightly", "SERVER_SPEC": "mariadb-10.11", "PERFCI_RUNNER_CLASS": "c",
                     "PERFCI_WORK_COUNTER": "callgrind"}


@pytest.mark.parametrize("workflow, job, step, extra_env, outcomes", [
    # the nightly's compare: a regression goes on to confirm and issues
    ("perfci-nightly.yml", "bench", "Compare with baselines", {}, ((0, True), (1, True), (2, False), (3, False))),
    # a bisect by counted work (a .work series' issue): a first slower step found (1) is the answer
    ("perfci-bisect.yml", "bisect", "Bisect", {"SCENARIO": "x", "GOOD": "mysql-8.0.12", "BAD": "mysql-8.0.31",
                                               "METRIC": "", "MEASURE": "work", "PROFILE": "smoke", "CASE": "",
                                               "PERFCI_RUNNER_CLASS": "c"}, ((0, True), (1, True), (2, False), (3, False))),
    # the nightly's counted run (its second series): a run is 0, else the job fails
    ("perfci-nightly.yml", "bench", "Count the scenario's work", COUNTED_NIGHT_ENV,
     ((0, True), (2, False), (3, False))),
    # the PR checks: one `perfci pr-check` (it applies perf-expected: tests/sessions/test_pr_check.py);
    # its exit code is the step's
    ("perfci-pr.yml", "smoke-ab", "Paired smoke A/B", {"PERF_EXPECTED": "true", "PR_NUMBER": "7"},
     ((0, True), (1, False), (2, False), (3, False))),
    ("perfci-server-pr.yml", "build-ab", "Build base and head", {"PERF_EXPECTED": "true", **SERVER_PR_ENV},
     ((0, True), (1, False), (2, False), (3, False))),
    # the nightly's report: a standing regression (1) still publishes the history; so does a
    # GitHub failure after the history was written (3: the job fails at its last step)
    ("perfci-nightly.yml", "report", "History, triage", {}, ((0, True), (1, True), (2, False), (3, True))),
])
def test_a_perfci_step_passes_or_fails_on_each_exit_code_as_its_workflow_says(tmp_path, workflow, job, step,
                                                                              extra_env, outcomes):
    """The step scripts as the runner executes them (bash -e), with perfci stood in by
    a script exiting with each code of the contract."""
    script = _step_script(workflow, job, step)
    for code, passes in outcomes:
        work = tmp_path / str(code)
        (work / "scripts").mkdir(parents=True)
        (work / "scripts" / "perfci").write_text(f"#!/bin/sh\necho \"$@\" >> calls\ntouch report.md\n"
                                                 f"for a in \"$@\"; do case $a in ab-*.md) touch \"$a\";; esac; done\n"
                                                 f"exit {code}\n")
        (work / "scripts" / "perfci").chmod(0o755)
        shutil.copy2(REPO / "scripts" / "step-signals.sh", work / "scripts" / "step-signals.sh")
        (work / ".perfci-tool").symlink_to(work)  # the reusable nightly runs perfci from beside the project
        (work / "git").write_text("#!/bin/sh\ncase $1 in diff) echo scenarios/x.yaml;; esac\nexit 0\n")
        (work / "git").chmod(0o755)
        (work / "scenarios").mkdir()
        (work / "scenarios" / "x.yaml").write_text("name: x\n")
        (work / "artifacts" / "results-x" / "results").mkdir(parents=True)  # the report job's download
        env = {**os.environ, "PATH": f"{work}{os.pathsep}{os.environ['PATH']}", "GITHUB_OUTPUT": str(work / "out"),
               "GITHUB_WORKSPACE": str(work),
               "GITHUB_STEP_SUMMARY": str(work / "summary"), "BASE_SHA": "0" * 40,
               # a team project (perfci pinned beside it): no harness A/B (its own test: test_harness_check)
               "PERFCI_REPOSITORY": "perfci-org/perfci", **extra_env}
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True)
        assert (proc.returncode == 0) == passes, f"exit {code}: step exited {proc.returncode}: {proc.stderr}"
        if workflow == "perfci-server-pr.yml":  # one command, every input passed on
            assert (work / "calls").read_text().split() == [
                "pr-check", "server-code", "--flavor", "mariadb", "--base", "0" * 40, "--head", "1" * 40, "--mirror",
                SERVER_PR_ENV["PERFCI_SERVER_MIRROR"], "--scenarios", "x", "microbench", "--phases", "--pr-number", "7",
                "--perf-expected", "true"]
        if workflow == "perfci-pr.yml":
            assert (work / "calls").read_text().split() == [
                "pr-check", "scenarios", "--base", "0" * 40, "--pr-number", "7", "--perf-expected", "true"]
        if step == "Bisect":  # the metric left to perfci: instructions_per_txn when counting
            assert (work / "calls").read_text().split() == [
                "bisect", "x", "--good", "mysql-8.0.12", "--bad", "mysql-8.0.31", "--metric", "--measure", "work",
                "--profile", "smoke", "--out", "bisect", "--runner-class", "c"]
        if step.startswith("Count the scenario's work"):  # the case again, counted, beside the timed result
            assert (work / "calls").read_text().split() == [
                "run", "x", "--profile", "nightly", "--server", "mariadb-10.11", "--out", "results", "--runner-class", "c",
                "--measure", "work", "--work-counter", "callgrind"]


def test_the_approval_is_revoked_on_every_push_without_running_pr_code():
    """perf-approval.yml holds a token that can edit labels (pull_request_target): it
    must not check out or run anything of the PR, and only on new commits."""
    doc = yaml.safe_load((REPO / ".github/workflows/perf-approval.yml").read_text())
    triggers = doc[True] if True in doc else doc["on"]
    assert triggers == {"pull_request_target": {"types": ["synchronize", "reopened"]}}
    [(name, job)] = doc["jobs"].items()
    assert job["runs-on"] == "ubuntu-latest" and job["permissions"] == {"pull-requests": "write"}
    assert all("uses" not in step for step in job["steps"])  # no checkout, no action
    script = " ".join(step["run"] for step in job["steps"])
    assert script == 'gh api -X DELETE "repos/$REPO/issues/$PR/labels/run-perf" --silent'
    assert "${{" not in script  # inputs come through env, never spliced into the script


def test_the_pr_check_runs_for_every_file_that_can_move_a_number_and_holds_back_bot_updates():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "pr-checks.yml").read_text())
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on:` as true
    paths = set(on["pull_request"]["paths"])
    assert {"requirements.lock", "pyproject.toml", "scripts/**", "tests/**", "ci/**", "servers.yaml"} <= paths
    condition = _jobs(REPO / ".github" / "workflows" / "perfci-pr.yml")["smoke-ab"]["if"]
    assert "github.event.pull_request.user.login != 'dependabot[bot]'" in condition  # its code: label first


def test_the_pr_comment_job_runs_no_pr_code_and_holds_only_its_comment_permission():
    """workflow_run after pr-checks: the default branch's perfci reads the A/B reports as
    text; the token can write comments (pull-requests) and read the run's artifact."""
    doc = yaml.safe_load((REPO / ".github/workflows/pr-comment.yml").read_text())
    triggers = doc[True] if True in doc else doc["on"]
    assert triggers == {"workflow_run": {"workflows": ["pr-checks"], "types": ["completed"]}}
    [(name, caller)] = doc["jobs"].items()
    assert caller["uses"] == "./.github/workflows/perfci-pr-comment.yml"  # the one `perfci init` projects call
    [(name, job)] = _jobs(REPO / ".github/workflows/perfci-pr-comment.yml").items()
    assert job["runs-on"] == "ubuntu-latest" and caller["permissions"] == job["permissions"]
    assert job["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert set(checkout.get("with", {})) == {"persist-credentials"}  # no ref: the default branch, never the PR's
    script = " ".join(s.get("run", "") for s in job["steps"])
    assert "${{" not in script and "--head-sha \"$HEAD_SHA\"" in script  # event values only through env
    # the PR check hands the reports over, and a regression fails it (see above)
    steps = _jobs(REPO / ".github" / "workflows" / "perfci-pr.yml")["smoke-ab"]["steps"]
    upload = next(s for s in steps if s.get("name", "").startswith("Upload the A/B reports"))
    assert upload["with"] == {"name": "pr-report", "path": "pr-report"}


def test_a_nightly_whose_github_calls_failed_still_pushes_its_history_and_fails():
    """perfci nightly exits 3 when a GitHub call fails after the history was appended:
    the report job hands the history on (its output), the push job pushes it, and the
    report job fails at its end, so the failure is seen and the run can be replayed."""
    import yaml
    flow = yaml.safe_load((REPO / ".github" / "workflows" / "perfci-nightly.yml").read_text())
    report, push = flow["jobs"]["report"], flow["jobs"]["push"]
    assert report["outputs"]["history"] == "${{ steps.night.outputs.history }}"
    assert "needs.report.outputs.history == 'written'" in push["if"] and "needs.report.result" not in push["if"]
    [fail] = [s for s in report["steps"] if "steps.night.outputs.code == '3'" in str(s.get("if", ""))]
    assert fail is report["steps"][-1] and "exit 3" in fail["run"]
    night = next(s for s in report["steps"] if s.get("id") == "night")
    assert 'echo "history=written" >> "$GITHUB_OUTPUT"' in night["run"]


def test_the_compiler_cache_is_kept_apart_per_trust_level():
    """A pull request's compiled objects never reach the nightly's builds: the ccache
    directory on the runner and the actions/cache key both name the trust level."""
    import yaml
    flow = yaml.safe_load((REPO / ".github" / "workflows" / "build-server.yml").read_text())
    job = flow["jobs"]["build"]
    trust = "startsWith(github.event_name, 'pull_request') && 'pr' || 'trusted'"
    assert trust in job["env"]["TRUST"] and trust in job["env"]["CCACHE_DIR"]
    [cache] = [s for s in job["steps"] if "actions/cache" in s.get("uses", "")]
    assert cache["with"]["key"].startswith("ccache-${{ env.TRUST }}-")
    assert cache["with"]["restore-keys"].startswith("ccache-${{ env.TRUST }}-")


def test_every_job_fetches_perfci_the_same_way():
    """The "perfci itself, beside the project" step is written out in each job of the
    reusable workflows (a reusable workflow cannot call its own repository's action at the
    caller's pin before it has fetched it): every copy is the same step, token handling
    and the act and self cases included."""
    copies = {}
    for path in sorted((REPO / ".github" / "workflows").glob("perfci-*.yml")):
        for name, job in yaml.safe_load(path.read_text())["jobs"].items():
            for step in job.get("steps", []):
                if step.get("name") == "perfci itself, beside the project (.perfci-tool)":
                    copies[f"{path.name}:{name}"] = (step["env"], step["run"])
    assert len(copies) >= 7, sorted(copies)
    first = next(iter(copies.values()))
    assert "PERFCI_TOKEN" in first[0] and "GIT_CONFIG_VALUE_0" in first[1] and "PERFCI_ACT_TOOL" in first[1]
    assert {where for where, copy in copies.items() if copy != first} == set()


PYTHON_MODULE_RUN = re.compile(r"""(?:python3?|/python")\s+(-\S+\s+)*-m\s+\w+""")


def test_python_never_takes_a_module_from_the_checkout_it_runs_in(tmp_path):
    """A PR checkout is the working directory of the steps: `python3 -m venv` there ran the
    PR's own venv.py (and `-m pip` its pip/) before the token step. Every module run in
    perfci's reusable workflows is isolated (-I: no working directory on sys.path). The
    planted venv.py runs without -I and not with it (what -I is for, shown here)."""
    runs = []
    for path in sorted((REPO / ".github" / "workflows").glob("perfci-*.yml")):
        for job in _jobs(path).values():
            for step in job.get("steps", []):
                runs += [(path.name, m.group(0)) for m in PYTHON_MODULE_RUN.finditer(step.get("run", ""))]
    assert runs and all(" -I " in text for _, text in runs), [r for r in runs if " -I " not in r[1]]
    (tmp_path / "venv.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    subprocess.run([sys.executable, "-m", "venv", "--help"], cwd=tmp_path, capture_output=True)
    assert (tmp_path / "ran").exists()
    (tmp_path / "ran").unlink()
    subprocess.run([sys.executable, "-I", "-m", "venv", "--help"], cwd=tmp_path, capture_output=True)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("workflow, measuring", [("perfci-pr.yml", "smoke-ab"), ("perfci-server-pr.yml", "build-ab")])
def test_perf_expected_counts_only_as_githubs_answer_asked_in_a_job_without_pr_code(workflow, measuring):
    """Triage access may add labels: the measuring job's --perf-expected is the `accepted`
    job's answer (`perfci pr-check accepted`: who added the label, with write access),
    never the event's label list; that job runs on a GitHub-hosted runner with a read token
    and no PR code (the base's or the pinned perfci); the measuring job has no
    pull-requests permission."""
    jobs = _jobs(REPO / ".github" / "workflows" / workflow)
    job = jobs["accepted"]
    assert job["runs-on"] == "ubuntu-latest" and job["permissions"] == {"contents": "read", "pull-requests": "read"}
    assert job["outputs"] == {"perf-expected": "${{ steps.asked.outputs.perf-expected }}"}
    [asked] = [s for s in job["steps"] if s.get("id") == "asked"]
    assert asked["run"] == '.perfci-tool/scripts/perfci pr-check accepted --pr-number "$PR_NUMBER"'
    assert asked["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert not any("uses" in step for step in job["steps"])  # no checkout of the PR: perfci is fetched by commit
    tool = next(step for step in job["steps"] if ".perfci-tool" in step["name"])
    assert "ln -sfn . .perfci-tool" not in tool["run"]  # perfci's own repository: not the PR's perfci either
    measuring_job = jobs[measuring]
    assert "accepted" in ([measuring_job["needs"]] if isinstance(measuring_job["needs"], str) else measuring_job["needs"])
    values = [str(v) for step in measuring_job["steps"] for v in (step.get("env") or {}).values()]
    assert "${{ needs.accepted.outputs.perf-expected == 'true' }}" in values
    assert not any("labels" in v for v in values), values  # the event's labels decide nothing
    assert "pull-requests" not in (measuring_job.get("permissions") or {})
