"""The server-code PR check as a real runner runs it: an unprivileged runner user of this
host (not root anywhere), set up by scripts/runner-bootstrap --sandbox-user, perfci
installed by the venv route and run from its checkout (the workflow's .perfci-tool), the
check started with `perfci pr-check server-code`, then
the job-completed hook. The PR tries to get out at every stage it has code in."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SYSTEM_PATH, require_tools, write_tiny
from small_server_tree import git, make_every_commit_durable, plant_escapes, server_tree, sleepers

pytestmark = [pytest.mark.e2e, pytest.mark.alone]

RUNNER, SANDBOX = "perfci-e2e-runner", "perfci-e2e-sandbox"  # real users, made and removed here


@pytest.fixture
def runner_user(shared_dir):
    """The runner user (a real user: sudo knows only those) with its home, bootstrapped
    as a runner with a sandbox account; both, the sudo rule and the hooks removed after."""
    if os.geteuid() != 0:
        pytest.skip("makes users of the host: root only")
    require_tools("sudo", "bwrap", "useradd", "cmake", "ninja", "git",
                  hint="apt-get install sudo bubblewrap cmake ninja-build git; scripts/install-deps does")
    home, runner_dir, hooks = shared_dir / "home", shared_dir / "actions-runner", shared_dir / "hooks"
    made = subprocess.run(["useradd", "--system", "--user-group", "--home-dir", str(home), "--create-home",
                           "--shell", "/bin/bash", RUNNER], capture_output=True, text=True)
    assert made.returncode in (0, 9), made.stderr  # 9: there from a test that was killed
    try:
        runner_dir.mkdir()
        shutil.chown(runner_dir, RUNNER, RUNNER)
        area = shared_dir / "pr"
        proc = subprocess.run(["bash", str(REPO / "scripts" / "runner-bootstrap"), str(runner_dir), "--sandbox-user",
                               SANDBOX], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PERFCI_SKIP_PACKAGES": "1", "PERFCI_HOOKS_DIR": str(hooks),
                                   "PERFCI_PR_AREA": str(area)})
        assert proc.returncode == 0, proc.stderr
        yield {"home": home, "area": area, "completed": hooks / "job-completed.sh"}
    finally:
        for user in (SANDBOX, RUNNER):
            subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", user], capture_output=True)
            subprocess.run(["groupdel", user], capture_output=True)
        Path(f"/etc/sudoers.d/perfci-sandbox-{SANDBOX}").unlink(missing_ok=True)


def as_runner(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess:
    """As the runner user with its groups (the sandbox's among them), as its service starts jobs."""
    return subprocess.run(["setpriv", f"--reuid={RUNNER}", f"--regid={RUNNER}", "--init-groups", *argv], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_a_server_code_pr_check_run_by_an_unprivileged_runner_keeps_every_escape_in(installed_perfci, runner_user,
                                                                                     shared_dir):
    """A PR of a server repository whose configure step, and whose server at every start,
    try to write the runner user's git config, the trusted build cache and ~/.cargo/bin,
    to reach a listener on the host's loopback and to leave a renamed `setsid` sleeper.
    The runner user fetches both commits into its mirror and runs the check (the builds
    and both servers in the sandbox as the account; sysbench and perfci on the servers'
    sockets), then job-completed. Every write failed, the listener heard nothing, no sleeper is
    left, and the verdict is the durable commit's: a regression, exit 1."""
    exe, installed_env = installed_perfci
    tool = exe.parents[2] / "perfci" / "scripts" / "perfci"  # .perfci-tool's, with the job's venv first on PATH
    home, area = runner_user["home"], runner_user["area"]
    repo = server_tree(shared_dir)
    (repo / "perf").mkdir()
    write_tiny(repo / "perf", name="tiny", time=60, transactions=2400, burst=400)
    git(repo, "add", "perf")
    git(repo, "commit", "-q", "-m", "perf: a scenario of our own")
    base = git(repo, "rev-parse", "HEAD")
    make_every_commit_durable(repo)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    trusted = home / ".cache" / "perfci" / "builds"  # a runner's trusted build cache
    trusted.mkdir(parents=True)
    head = plant_escapes(repo, home, trusted, listener.getsockname()[1])
    subprocess.run(["chown", "-R", f"{RUNNER}:{RUNNER}", str(repo), str(home)], check=True)
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    cache = area / "cache"  # the job's cache, in the pull-request area (as the server-code workflow sets it)
    env = {"PATH": f"{exe.parent}:{SYSTEM_PATH}", "HOME": str(home), "LANG": "C.UTF-8",
           "PERFCI_SANDBOX_USER": SANDBOX, "PERFCI_CACHE": str(cache), "PERFCI_AB_SIZE": "profile",
           "PERFCI_EXPLAIN": "never", "PERFCI_MEASURE": "time",  # its server is a script: no symbols
           **{k: v for k, v in installed_env.items() if k in ("PERFCI_LOCK_FILE",)}}
    mirror = cache / "src" / "server-pr-mirror.git"
    fetched = as_runner([str(tool), "pr-fetch", "--mirror", str(mirror), "--url", str(repo), base, head], env, repo)
    assert fetched.returncode == 0, fetched.stderr
    check = as_runner([str(tool), "pr-check", "server-code", "--flavor", "mariadb", "--base", base, "--head", head,
                       "--mirror", str(mirror), "--scenarios", "perf/tiny.yaml"], env, repo)
    assert check.returncode == 1 and "perfci: B regressed in tiny" in check.stdout, check.stdout + check.stderr[-4000:]
    [log] = (cache / "jobs").glob(f"pr-*/builds/mariadb-{head}-*.log")  # the PR's build: its job's scratch, emptied
    assert [p.name for p in log.parent.iterdir()] == [log.name] and not (log.parent.parent / "tree").exists()
    assert f"sandboxed as {SANDBOX}" in log.read_text() and "escape: network: failed" in log.read_text()
    done = as_runner(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(runner_user["completed"])],
                     {**env, "RUNNER_NAME": "e2e", "RUNNER_TEMP": str(shared_dir / "runner-temp")}, home, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == before, "a write got out"
    with pytest.raises(BlockingIOError):
        listener.accept()
    assert not sleepers()
    report = (repo / "pr-report" / "ab-tiny.md").read_text()
    assert f"A: `build:mariadb@{base}`" in report and "🔴 regression" in report, report[:2000]
