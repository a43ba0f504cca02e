"""The self-hosted runner's job hooks, installed by runner-bootstrap and run as
actions/runner runs them (`bash --noprofile --norc -e -o pipefail FILE` on the installed
path): a real event file, the real GitHub API protocol (a local fake of GET
/repos/o/r/pulls/N), real processes and directories to clean up."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfci.sessions.pr_check import fork_refusal
from perfci.util.runner import temp_prefix

from conftest import REPO
from fake_github import FakeGitHub

BOOTSTRAP = REPO / "scripts" / "runner-bootstrap"
HEAD = "1" * 40
NEWER = "2" * 40


def pr_event(head_repo: str | None, action: str, label: str | None = None, sha: str = HEAD,
             sender: str = "maintainer") -> dict:
    event: dict = {"action": action, "number": 7, "sender": {"login": sender}, "pull_request": {
        "number": 7, "head": {"sha": sha, "repo": {"full_name": head_repo} if head_repo else None},
        "base": {"repo": {"full_name": "perf/ci"}}}}
    if label:
        event["label"] = {"name": label}
    return event


def bootstrap(runner: Path, hooks: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BOOTSTRAP), str(runner), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PERFCI_SKIP_PACKAGES": "1", "PERFCI_HOOKS_DIR": str(hooks)})


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """The hooks as runner-bootstrap installs them, by the names it gives the runner."""
    runner, hooks = tmp_path_factory.mktemp("actions-runner"), tmp_path_factory.mktemp("hooks")
    proc = bootstrap(runner, hooks)
    assert proc.returncode == 0, proc.stderr
    named = dict(line.split("=", 1) for line in (runner / ".env").read_text().splitlines() if "=" in line)
    return {"started": Path(named["ACTIONS_RUNNER_HOOK_JOB_STARTED"]),
            "completed": Path(named["ACTIONS_RUNNER_HOOK_JOB_COMPLETED"])}


def as_the_runner_runs(hook: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """actions/runner's way: bash -e on a .sh file (it refuses a hook of any other name)."""
    assert hook.suffix in (".sh", ".ps1", ".js"), f"the runner cannot start {hook}"
    return subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(hook)],
                          capture_output=True, text=True, env=env, timeout=60)


def started(installed: dict[str, Path], tmp_path: Path, event_name: str, event: dict,
            api_env: dict | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    env = {"PATH": os.environ["PATH"], "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(path),
           "GITHUB_REPOSITORY": "perf/ci", "GITHUB_API_URL": "https://127.0.0.1:9/api/v3", **(api_env or {})}
    return as_the_runner_runs(installed["started"], env)


@pytest.fixture
def github(tmp_path):
    with FakeGitHub(tmp_path) as fake:
        fake.pulls[7] = {"number": 7, "head": {"sha": HEAD}}
        fake.permissions.update({"maintainer": "write", "triager": "triage"})
        token = tmp_path / "hook-token"
        token.write_text(fake.token + "\n")
        yield fake, {"GITHUB_API_URL": fake.api_url, "SSL_CERT_FILE": str(fake.cafile),
                     "PERFCI_HOOK_TOKEN_FILE": str(token)}


def test_scheduled_and_same_repository_runs_are_accepted(installed, tmp_path):
    proc = started(installed, tmp_path, "schedule", {"schedule": "17 2 * * *"})
    assert proc.returncode == 0 and "accepted: schedule event" in proc.stdout
    proc = started(installed, tmp_path, "pull_request", pr_event("perf/ci", "synchronize"))
    assert proc.returncode == 0 and "accepted: PR #7 from a branch of perf/ci" in proc.stdout


@pytest.mark.parametrize("action, label", [("opened", None), ("synchronize", None), ("labeled", "documentation")])
def test_a_fork_pr_is_refused_without_the_approval_label_event(installed, tmp_path, action, label):
    proc = started(installed, tmp_path, "pull_request", pr_event("mallory/ci", action, label))
    assert proc.returncode == 1
    assert proc.stderr.startswith("perfci job-started: refused: PR #7 comes from a fork (mallory/ci): it runs here "
                                  f"only on the 'run-perf' label event of a maintainer, for the commit they labelled "
                                  f"(this is a '{action}' event)")


def test_a_dependabot_pr_from_a_branch_here_needs_the_label_like_a_fork(installed, tmp_path, github):
    fake, env = github
    event = pr_event("perf/ci", "synchronize")
    event["pull_request"]["user"] = {"login": "dependabot[bot]"}
    proc = started(installed, tmp_path, "pull_request", event)
    assert proc.returncode == 1 and "PR #7 is dependabot[bot]'s, unreviewed: it runs here only on" in proc.stderr
    labelled = {**event, "action": "labeled", "label": {"name": "run-perf"}}
    proc = started(installed, tmp_path, "pull_request", labelled, env)
    assert proc.returncode == 0, proc.stderr


def test_a_fork_pr_labelled_for_its_current_head_is_accepted(installed, tmp_path, github):
    fake, env = github
    proc = started(installed, tmp_path, "pull_request", pr_event("mallory/ci", "labeled", "run-perf"), env)
    assert proc.returncode == 0, proc.stderr
    assert "accepted: PR #7 from a fork, head 111111111111 approved by the 'run-perf' label of maintainer" \
        in proc.stdout
    assert ("GET", "/api/v3/repos/perf/ci/pulls/7") in fake.requests
    assert ("GET", "/api/v3/repos/perf/ci/collaborators/maintainer/permission") in fake.requests


def test_an_approval_label_from_someone_without_write_access_is_refused(installed, tmp_path, github):
    """Triage access can add labels; approving code to run on the runner takes write access."""
    fake, env = github
    event = pr_event("mallory/ci", "labeled", "run-perf", sender="triager")
    proc = started(installed, tmp_path, "pull_request", event, env)
    assert proc.returncode == 1 and "applied by triager, who has triage access" in proc.stderr, proc.stderr
    proc = started(installed, tmp_path, "pull_request", pr_event("mallory/ci", "labeled", "run-perf", sender="mallory"),
                   env)  # not a collaborator at all: the API answers 404
    assert proc.returncode == 1 and "cannot confirm that mallory may approve it" in proc.stderr, proc.stderr
    no_token = {k: v for k, v in env.items() if k != "PERFCI_HOOK_TOKEN_FILE"}
    proc = started(installed, tmp_path, "pull_request", pr_event("mallory/ci", "labeled", "run-perf"), no_token)
    assert proc.returncode == 1 and "PERFCI_HOOK_TOKEN_FILE" in proc.stderr


def test_a_fork_pr_whose_head_moved_after_the_label_is_refused(installed, tmp_path, github):
    fake, env = github
    fake.pulls[7]["head"]["sha"] = NEWER  # pushed after the maintainer read and labelled HEAD
    proc = started(installed, tmp_path, "pull_request", pr_event("mallory/ci", "labeled", "run-perf"), env)
    assert proc.returncode == 1
    assert ("refused: PR #7 from a fork: the 'run-perf' label approved 111111111111, but the head is now "
            "222222222222") in proc.stderr


def test_doubt_refuses_a_fork(installed, tmp_path):
    """The API does not answer (port 9): no approval can be confirmed."""
    proc = started(installed, tmp_path, "pull_request", pr_event(None, "labeled", "run-perf"))
    assert proc.returncode == 1 and "cannot confirm that maintainer may approve it" in proc.stderr
    proc = started(installed, tmp_path, "issue_comment", {"action": "created"})
    assert proc.returncode == 1 and "'issue_comment' events do not run on benchmark runners" in proc.stderr
    bad = tmp_path / "missing.json"
    proc = as_the_runner_runs(installed["started"], {"PATH": os.environ["PATH"], "GITHUB_EVENT_NAME": "schedule",
                                                     "GITHUB_EVENT_PATH": str(bad)})
    assert proc.returncode == 1 and "cannot read the event" in proc.stderr


def sleeper_named_sysbench(*args: str) -> subprocess.Popen:
    """A process the hook takes for sysbench, with these arguments on its command line. It is
    the interpreter itself, not `python3` from PATH: a wrapper there (a pyenv shim) would run
    python as its child and lose the `exec -a sysbench` name."""
    return subprocess.Popen(["bash", "-c", f"exec -a sysbench {shlex.quote(sys.executable)} "
                                           f"-c 'import time; time.sleep(120)' {shlex.join(args)}"])


def workdir_of(runner_name: str, runner_temp: Path, tmp: Path, monkeypatch) -> Path:
    """The temp dir perfci makes for a run on this runner (util/runner.py's name)."""
    monkeypatch.setenv("RUNNER_NAME", runner_name)
    monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    path = tmp / f"{temp_prefix()}1a2b3c4d"
    monkeypatch.delenv("RUNNER_NAME")
    monkeypatch.delenv("RUNNER_TEMP")
    (path / "data").mkdir(parents=True)
    return path


def test_job_completed_removes_what_the_job_left_and_nothing_of_another_runner(installed, tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    workspace = tmp_path / "work" / "ci"
    datadir = workdir_of("bench-1", tmp_path / "runner-temp", tmp, monkeypatch)
    neighbour = workdir_of("bench-2", tmp_path / "runner-2", tmp, monkeypatch)  # another runner on this host
    # a runner of the same name (the default, the host name) in another directory, mid-benchmark
    namesake = workdir_of("bench-1", tmp_path / "other-runner" / "_work" / "_temp", tmp, monkeypatch)
    (tmp / "perfci-host.lock").write_text("{}")  # the host lock: a file, never removed
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ncurl evil\n")
    unrelated = tmp / "keep-me"
    unrelated.mkdir()
    stray = sleeper_named_sysbench(f"--config-file={datadir}/sysbench-auth.cnf")  # this job's
    theirs = sleeper_named_sysbench(f"--config-file={neighbour}/sysbench-auth.cnf")  # the other runner's
    other = subprocess.Popen(["bash", "-c", "exec -a sysbench sleep 120"])  # nobody's job
    try:
        time.sleep(0.3)
        proc = as_the_runner_runs(installed["completed"], {
            "PATH": os.environ["PATH"], "TMPDIR": str(tmp), "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_NAME": "bench-1", "RUNNER_TEMP": str(tmp_path / "runner-temp")})
        assert proc.returncode == 0, proc.stderr
        assert stray.wait(timeout=10) == -15 and f"stopped stray processes: {stray.pid}" in proc.stdout
        assert other.poll() is None and theirs.poll() is None  # not this job's
        assert not datadir.exists() and neighbour.exists() and namesake.exists()
        assert unrelated.exists() and (tmp / "perfci-host.lock").exists()
        assert workspace.exists() and list(workspace.iterdir()) == []
    finally:
        for p in (stray, theirs, other):
            p.kill()
            p.wait()


def command_lines(needle: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", needle], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
@pytest.mark.skipif(os.geteuid() != 0, reason="runs the hook as another (non-root) user")
def test_job_completed_ends_every_process_a_non_root_runner_users_job_left_but_the_runners(installed, shared_dir):
    """A job of a non-root runner user left a `setsid` process named like a compiler; the
    hook, started by this runner's worker as actions/runner starts it, ends it, and keeps
    another runner's worker of the same user with its step. (Removed once: with the old
    rule, servers and sysbench only, the compiler stayed.)"""
    uid = 64301  # the runner user: a uid no process of the host has
    as_user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    hook = shared_dir / "job-completed.sh"
    shutil.copy(installed["completed"], hook)
    hook.chmod(0o755)
    subprocess.run([*as_user, "setsid", "-f", "bash", "-c", "exec -a cc1plus sleep 51170917"], check=True)
    other = subprocess.Popen([*as_user, "bash", "-c", "exec -a Runner.Worker bash -c 'sleep 51170918; true'"])
    try:
        time.sleep(0.3)
        assert command_lines("51170917") and command_lines("51170918")
        proc = subprocess.run(
            [*as_user, "bash", "-c",
             f"exec -a Runner.Worker bash -c 'bash --noprofile --norc -e -o pipefail {hook}; true'"],
            capture_output=True, text=True, timeout=60, env={"PATH": os.environ["PATH"]})
        assert proc.returncode == 0 and "ended processes the job left: " in proc.stdout, proc.stdout + proc.stderr
        deadline = time.monotonic() + 5
        while command_lines("51170917") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not command_lines("51170917"), "the job's compiler outlived it"
        assert other.poll() is None and command_lines("51170918"), "another runner's job was touched"
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "5117091[78]"], capture_output=True)
        other.wait()


def test_job_completed_ends_what_a_pull_request_left_running_as_the_sandbox_account(installed):
    """A cancelled job's pull-request server (or build) as the sandbox account, escaped into
    a session of its own: the hook ends every process of the account, and none of another
    user's. (Removed once: it outlived the job.)"""
    account = "64202:64202"  # a uid no process of the host has
    as_account = ["setpriv", "--reuid=64202", "--regid=64202", "--clear-groups"]
    subprocess.run([*as_account, "setsid", "-f", "bash", "-c", "exec -a mariadbd sleep 51170919"], check=True)
    bystander = subprocess.Popen(["bash", "-c", "exec -a mariadbd sleep 51170920"])
    try:
        deadline = time.monotonic() + 10  # setsid -f returns before the exec: a busy host may take a while
        while not command_lines("51170919") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert command_lines("51170919")
        proc = as_the_runner_runs(installed["completed"], {"PATH": os.environ["PATH"], "PERFCI_SANDBOX_USER": account})
        assert proc.returncode == 0 and "ended the sandbox account's processes" in proc.stdout, proc.stdout
        deadline = time.monotonic() + 5
        while command_lines("51170919") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not command_lines("51170919"), "the pull request's process outlived the job"
        assert bystander.poll() is None
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "5117091[9]|51170920"], capture_output=True)
        bystander.wait()


def test_bootstrap_installs_the_hooks_outside_the_checkout_and_names_them_in_the_runner_env(tmp_path):
    runner = tmp_path / "actions-runner"
    runner.mkdir()
    (runner / ".env").write_text("LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_STARTED=/old/hook\n")
    hooks = tmp_path / "hooks"
    proc = bootstrap(runner, hooks, "--ephemeral")
    assert proc.returncode == 0, proc.stderr
    assert (runner / ".env").read_text().splitlines() == [
        "LANG=C.UTF-8", f"ACTIONS_RUNNER_HOOK_JOB_STARTED={hooks}/job-started.sh",
        f"ACTIONS_RUNNER_HOOK_JOB_COMPLETED={hooks}/job-completed.sh", "PERFCI_DOCKER=0"]
    source = REPO / "scripts" / "runner-hooks"
    for name in ("job-started.sh", "job-started.py", "job-completed.sh"):
        assert (hooks / name).read_bytes() == (source / name).read_bytes() and os.access(hooks / name, os.X_OK)
    assert "./config.sh --ephemeral" in proc.stdout
    proc = subprocess.run([str(REPO / "scripts" / "runner-bootstrap"), str(tmp_path / "nope")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PERFCI_SKIP_PACKAGES": "1"})
    assert proc.returncode == 2 and "no such directory" in proc.stderr


RUNNER_UID = 65534  # nobody: the runner user, who owns its runner directory


def as_runner_user(*cmd: str) -> None:
    subprocess.run(["setpriv", f"--reuid={RUNNER_UID}", f"--regid={RUNNER_UID}", "--clear-groups", *cmd], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="bootstrap runs as root against a runner user's directory")
def test_bootstrap_follows_no_link_the_runner_user_planted(shared_dir, tmp_path):
    """The runner user (a real non-root user) plants `.env` -> a root-only file and
    `.env.new` -> a file it wants overwritten; root runs runner-bootstrap: nothing is read
    through a link or written through one, and a fresh .env is root's, 0644."""
    runner = shared_dir / "actions-runner"
    runner.mkdir()
    os.chown(runner, RUNNER_UID, RUNNER_UID)
    secret, victim = shared_dir / "secret", shared_dir / "victim"
    secret.write_text("root-only\n")
    secret.chmod(0o600)
    victim.write_text("keep\n")
    as_runner_user("ln", "-s", str(secret), str(runner / ".env"))
    as_runner_user("ln", "-s", str(victim), str(runner / ".env.new"))
    proc = bootstrap(runner, tmp_path / "hooks")
    assert proc.returncode == 2 and ".env is a symlink: refusing to follow it" in proc.stderr, proc.stderr
    assert (runner / ".env").is_symlink() and secret.read_text() == "root-only\n" and victim.read_text() == "keep\n"
    as_runner_user("rm", str(runner / ".env"))
    proc = bootstrap(runner, tmp_path / "hooks")
    assert proc.returncode == 0, proc.stderr
    env = runner / ".env"
    info = env.lstat()
    assert not env.is_symlink() and info.st_uid == 0 and oct(info.st_mode & 0o777) == "0o644"
    assert "ACTIONS_RUNNER_HOOK_JOB_STARTED=" in env.read_text() and victim.read_text() == "keep\n"
    assert "PERFCI_DOCKER=0" in env.read_text().splitlines()  # no --docker: the jobs' install-deps leave it out
    assert (runner / ".env.new").is_symlink()  # left as planted, never written through
    from perfci.host import host_checks
    checked = host_checks.hooks(runner, runner_uid=RUNNER_UID)  # what bootstrap installed passes doctor's checks
    assert checked.status == "ok", checked.found


@pytest.mark.skipif(os.geteuid() != 0, reason="a hard link to root's file, made by root for the test")
def test_bootstrap_refuses_an_env_that_is_a_hard_link(shared_dir, tmp_path):
    runner = shared_dir / "actions-runner"
    runner.mkdir()
    secret = shared_dir / "secret"
    secret.write_text("root-only\n")
    secret.chmod(0o600)
    os.link(secret, runner / ".env")
    proc = bootstrap(runner, tmp_path / "hooks")
    assert proc.returncode == 2 and "hard links: refusing" in proc.stderr, proc.stderr


def test_the_started_hook_runs_the_interpreter_bootstrap_checked_not_one_from_path(installed, tmp_path):
    """PATH at job start comes from the runner's .path, which the runner user can edit: a
    python3 of its own first on PATH does not decide the fork guard."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho 'perfci job-started: accepted: by a planted python3'\nexit 0\n")
    (fake / "python3").chmod(0o755)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(pr_event("someone/fork", "synchronize")))
    env = {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(path), "GITHUB_REPOSITORY": "perf/ci", "PYTHONSTARTUP": str(fake / "python3"),
           "PYTHONPATH": str(fake)}
    proc = as_the_runner_runs(installed["started"], env)
    assert proc.returncode == 1 and "refused: PR #7 comes from a fork" in proc.stderr, proc.stdout + proc.stderr
    assert "planted" not in proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="bootstrap runs as root against a runner user's directory")
def test_a_locked_runner_directory_is_roots_but_for_what_the_runner_writes(shared_dir, tmp_path):
    """--lock-runner-dir: the runner user can no longer rename .env or edit the runner's
    own files (which decide the hooks at its next start); _work and _diag stay its own. A
    link it planted is not followed (its target keeps its owner and mode)."""
    runner = shared_dir / "actions-runner"
    for d in ("", "bin", "_work", "_diag"):
        (runner / d).mkdir(exist_ok=True)
    (runner / "run.sh").write_text("#!/bin/sh\n")
    (runner / "bin" / "Runner.Listener").write_text("x")
    outside = shared_dir / "outside"
    outside.write_text("keep")
    outside.chmod(0o666)
    os.chown(outside, 1234, 1234)  # another user's file
    for path in [runner, *runner.rglob("*")]:
        os.chown(path, RUNNER_UID, RUNNER_UID)
    as_runner_user("ln", "-s", str(outside), str(runner / "bin" / "link"))
    proc = bootstrap(runner, tmp_path / "hooks", "--lock-runner-dir")
    assert proc.returncode == 0, proc.stderr
    assert (runner / ".env").stat().st_uid == 0 and (runner / "bin" / "Runner.Listener").stat().st_uid == 0
    assert oct(outside.stat().st_mode & 0o777) == "0o666" and outside.stat().st_uid == 1234  # not followed
    for attempt in (["mv", str(runner / ".env"), str(runner / "env.old")],
                    ["sh", "-c", f"echo evil > {runner / 'run.sh'}"],
                    ["touch", str(runner / "bin" / "new")]):
        denied = subprocess.run(["setpriv", f"--reuid={RUNNER_UID}", f"--regid={RUNNER_UID}", "--clear-groups",
                                 *attempt], capture_output=True, text=True)
        assert denied.returncode != 0, attempt
    as_runner_user("touch", str(runner / "_work" / "job-file"), str(runner / "_diag" / "Runner.log"))
    assert (runner / "_work").stat().st_uid == RUNNER_UID


SANDBOX_USER, TEST_RUNNER = "perfci-t-sandbox", "perfci-t-runner"  # real users, made and removed by the test


@pytest.fixture
def host_users():
    """The runner user as a real user of the host (sudo knows only those); the sandbox
    account, the sudo rule and the group membership runner-bootstrap makes are removed
    after the test."""
    if os.geteuid() != 0:
        pytest.skip("makes users of the host: root only")
    from conftest import require_tools
    require_tools("sudo", "bwrap", "useradd", hint="apt-get install sudo bubblewrap; scripts/install-deps does")
    made = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                           TEST_RUNNER], capture_output=True, text=True)
    assert made.returncode in (0, 9), made.stderr  # 9: there from a test that was killed
    yield
    for user in (SANDBOX_USER, TEST_RUNNER):
        subprocess.run(["userdel", user], capture_output=True)
        subprocess.run(["groupdel", user], capture_output=True)
    Path(f"/etc/sudoers.d/perfci-sandbox-{SANDBOX_USER}").unlink(missing_ok=True)


def test_bootstrap_makes_the_sandbox_a_runner_user_builds_pull_requests_in(host_users, shared_dir, tmp_path):
    """--sandbox-user: an account, one sudo rule (bubblewrap and kill as the account, nothing else),
    a pull-request area both share, all named in .env. Then, as the real runner user (no
    root anywhere), the sandbox runs a build step: it runs as the account, writes the area,
    and what it wrote stays the runner user's to remove. (Removed once: without the group
    the runner user could not remove what the build made; without the rule sudo refused.)"""
    runner, area = shared_dir / "actions-runner", shared_dir / "pr"
    runner.mkdir()
    shutil.chown(runner, TEST_RUNNER, TEST_RUNNER)
    opt_in = tmp_path / "etc" / "fork-server-builds"
    proc = subprocess.run(["bash", str(BOOTSTRAP), str(runner), "--sandbox-user", SANDBOX_USER, "--allow-fork-builds"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PERFCI_SKIP_PACKAGES": "1", "PERFCI_HOOKS_DIR": str(tmp_path / "hooks"),
                               "PERFCI_PR_AREA": str(area), "PERFCI_FORK_OPT_IN": str(opt_in)})
    assert proc.returncode == 0, proc.stderr
    assert fork_refusal(opt_in) is None  # root's yes, as the server-code check reads it
    env = (runner / ".env").read_text().splitlines()
    assert f"PERFCI_SANDBOX_USER={SANDBOX_USER}" in env and f"PERFCI_PR_CACHE={area}" in env
    rule = Path(f"/etc/sudoers.d/perfci-sandbox-{SANDBOX_USER}").read_text()
    assert rule == (f"{TEST_RUNNER} ALL=({SANDBOX_USER}) NOPASSWD: {shutil.which('bwrap')}, "
                    f"{shutil.which('kill')}\n")
    code = shared_dir / "ci"  # perfci's sandbox module where the runner user can read it (stdlib only)
    shutil.copytree(REPO / "ci" / "perfci", code / "perfci")
    load = (f"import sys, importlib.util; sys.path.insert(0, {str(code)!r}); from pathlib import Path; "
            f"spec = importlib.util.spec_from_file_location('sandbox', {str(code / 'perfci/providers/sandbox.py')!r}); "
            "sandbox = sys.modules['sandbox'] = importlib.util.module_from_spec(spec); spec.loader.exec_module(sandbox); ")
    step = (f"{load}account_from, run_sandboxed = sandbox.account_from, sandbox.run_sandboxed; "
            f"sys.exit(run_sandboxed(['sh', '-c', 'mkdir sub && id -un > sub/out'], account_from({SANDBOX_USER!r}), "
            f"writable=[Path({str(area / 'build')!r})]))")
    as_runner = ["setpriv", f"--reuid={TEST_RUNNER}", f"--regid={TEST_RUNNER}", "--init-groups"]
    ran = subprocess.run([*as_runner, "/usr/bin/python3", "-c", step], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert ran.returncode == 0, ran.stderr
    out = area / "build" / "sub" / "out"
    assert out.read_text() == f"{SANDBOX_USER}\n" and out.owner() == SANDBOX_USER
    # a sandboxed server's process, found below sudo and bubblewrap, stopped and killed by the runner user
    # through the rule's `kill` (as the account: no other way reaches it)
    server = (f"import signal, subprocess, time; {load}"
              f"account = sandbox.account_from({SANDBOX_USER!r}); "
              "sandbox_command, sandboxed_argv, signal_argv = (sandbox.sandbox_command, sandbox.sandboxed_argv, "
              "sandbox.signal_argv); "
              f"proc = subprocess.Popen(sandboxed_argv(['sleep', '600'], account, writable=[Path({str(area / 'srv')!r})])); "
              "found = None\nwhile found is None: time.sleep(0.05); found = sandbox_command(proc.pid)\n"
              "host, inner = found; subprocess.run(signal_argv(account, host, signal.SIGSTOP), check=True); "
              "stat = Path(f'/proc/{host}/stat'); deadline = time.monotonic() + 10\n"
              "while stat.read_text().rsplit(')', 1)[1].split()[0] != 'T' and time.monotonic() < deadline: "
              "time.sleep(0.05)\n"
              "state = stat.read_text().rsplit(')', 1)[1].split()[0]; "
              "subprocess.run(signal_argv(account, host, signal.SIGKILL), check=True); "
              "print(inner, state, proc.wait(timeout=30))")
    stopped = subprocess.run([*as_runner, "/usr/bin/python3", "-c", server], capture_output=True, text=True,
                             timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert stopped.returncode == 0, stopped.stderr
    inner, state, code_of_sandbox = stopped.stdout.split()
    assert (inner, state) == ("2", "T") and code_of_sandbox != "0"
    # the rule starts bubblewrap and kill as the account, nothing else
    other = subprocess.run([*as_runner, "sudo", "-n", "-u", SANDBOX_USER, "--", "/bin/sh", "-c", "true"],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode != 0
    removed = subprocess.run([*as_runner, "rm", "-r", str(area / "build")], capture_output=True, text=True)
    assert removed.returncode == 0 and not (area / "build").exists(), removed.stderr
