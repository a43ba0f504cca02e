"""`perfci doctor`: each check on real files (a runner directory with its .env and hook
files, cgroup and proc trees laid out as the kernel does), and the command's contract."""

from __future__ import annotations

import json
import os

import pytest

from perfci.host import host_checks

from conftest import run_perfci


def runner_with_hooks(tmp_path, started="job-started.sh", completed="job-completed.sh",
                      body="#!/usr/bin/env bash\nexit 0\n"):
    runner = tmp_path / "actions-runner"
    hooks = tmp_path / "hooks"
    runner.mkdir(parents=True)
    hooks.mkdir()
    for name in (started, completed):
        (hooks / name).write_text(body + ("PYTHON=/usr/bin/python3\n" if name == "job-started.sh" else ""))
        (hooks / name).chmod(0o755)
    (hooks / "job-started.py").write_text("")
    (runner / ".env").write_text(f"LANG=C.UTF-8\nACTIONS_RUNNER_HOOK_JOB_STARTED={hooks / started}\n"
                                 f"ACTIONS_RUNNER_HOOK_JOB_COMPLETED={hooks / completed}\n")
    return runner, hooks


def test_hooks_named_present_runnable_and_not_the_runners_to_edit(tmp_path):
    runner, hooks = runner_with_hooks(tmp_path)
    good = host_checks.hooks(runner, runner_uid=1000)  # the files are root's, the runner is uid 1000
    assert good.status == "ok" and str(hooks / "job-started.sh") in good.found
    os.chown(hooks / "job-completed.sh", 1000, 1000)
    editable = host_checks.hooks(runner, runner_uid=1000)
    assert editable.status == "fail" and "job-completed.sh is owned by uid 1000, not root" in editable.found
    assert editable.fix == f"scripts/runner-bootstrap {runner} (then restart the runner service)"


def test_every_file_the_runner_reads_at_job_start_is_roots(tmp_path):
    """The .env naming the hooks, the hooks' directory, the Python hook and its interpreter:
    each a file only root may change (a job of the runner user could otherwise switch the
    fork guard off for the next one)."""
    runner, hooks = runner_with_hooks(tmp_path / "a")
    os.chown(runner / ".env", 1000, 1000)  # a job replaced .env in its own runner directory
    found = host_checks.hooks(runner, runner_uid=1000)
    assert found.status == "fail" and f"{runner / '.env'} is owned by uid 1000" in found.found
    runner, hooks = runner_with_hooks(tmp_path / "b")
    (hooks / "job-started.py").chmod(0o666)
    assert "job-started.py is writable by group or others" in host_checks.hooks(runner, runner_uid=1000).found
    runner, hooks = runner_with_hooks(tmp_path / "c")
    hooks.chmod(0o777)
    assert f"{hooks} is writable by group or others" in host_checks.hooks(runner, runner_uid=1000).found
    runner, hooks = runner_with_hooks(tmp_path / "d")
    (hooks / "job-started.sh").write_text("#!/usr/bin/env bash\nexec python3 job-started.py\n")
    assert "from PATH" in host_checks.hooks(runner, runner_uid=1000).found
    runner, hooks = runner_with_hooks(tmp_path / "e")
    (runner / ".env").rename(runner / "env.real")
    (runner / ".env").symlink_to(runner / "env.real")
    assert f"{runner / '.env'} is a symlink" in host_checks.hooks(runner, runner_uid=1000).found


def test_a_hook_the_runner_cannot_start_fails_with_the_reason(tmp_path):
    runner, _ = runner_with_hooks(tmp_path / "a", started="job-started", completed="job-completed")
    found = host_checks.hooks(runner, runner_uid=1000)
    assert found.status == "fail" and "starts only .sh, .ps1, .js hooks" in found.found
    runner, _ = runner_with_hooks(tmp_path / "b", body="#!/usr/bin/env bash\nif then fi (\n")
    found = host_checks.hooks(runner, runner_uid=1000)
    assert found.status == "fail" and "does not parse under bash -e" in found.found
    (tmp_path / "c").mkdir()
    bare = tmp_path / "c" / "runner"
    bare.mkdir()
    found = host_checks.hooks(bare)
    assert found.status == "fail" and "ACTIONS_RUNNER_HOOK_JOB_STARTED, ACTIONS_RUNNER_HOOK_JOB_COMPLETED not set" \
        in found.found
    assert host_checks.hooks(None).status == "info"


def test_host_settings_that_skew_numbers_warn_with_the_fix():
    quiet = {"cpu_governors": ["performance"], "transparent_hugepages": "madvise", "swap_used_bytes": 0,
             "swappiness": "1"}
    assert [f.status for f in (host_checks.governor(quiet), host_checks.huge_pages(quiet), host_checks.swap(quiet))] == ["ok"] * 3
    noisy = {"cpu_governors": ["powersave", "schedutil"], "transparent_hugepages": "always",
             "swap_used_bytes": 512 * 2**20, "swappiness": "60"}
    findings = [host_checks.governor(noisy), host_checks.huge_pages(noisy), host_checks.swap(noisy)]
    assert [f.status for f in findings] == ["warn"] * 3 and all(f.fix for f in findings)
    assert "powersave, schedutil" in findings[0].found and "512 MiB of swap in use" in findings[2].found
    assert host_checks.governor({"cpu_governors": None}).status == "info"


def test_doctor_and_the_recorded_host_check_read_one_policy():
    """doctor's warnings are the sentences every result records before it runs
    (hostinfo.host_check's warnings): host/policy.py decides both."""
    from perfci.host import policy
    noisy = {"cpu_governors": ["powersave"], "transparent_hugepages": "always", "swap_used_bytes": 512 * 2**20,
             "load_1m": 64.0}
    said = [f.found for f in (host_checks.governor(noisy), host_checks.huge_pages(noisy), host_checks.swap(noisy),
                              host_checks.load(noisy))]
    assert said == [policy.governor_problem(["powersave"]), policy.huge_pages_problem("always"),
                    policy.swap_problem(512 * 2**20), policy.load_problem(64.0, os.cpu_count() or 1)]
    assert policy.busy(policy.BUSY_OTHER_CORES + 0.01) and not policy.busy(policy.BUSY_OTHER_CORES)
    assert not policy.busy(None)


def test_other_servers_fail_and_name_each():
    found = host_checks.other_servers(["mariadbd (pid 812)", "sysbench (pid 990)"])
    assert found.status == "fail" and "mariadbd (pid 812), sysbench (pid 990)" in found.found
    assert "--allow-busy" in found.fix
    assert host_checks.other_servers([]).status == "ok"


def test_freezer_from_the_cgroup_trees(tmp_path):
    v1, v2 = tmp_path / "freezer", tmp_path / "unified"
    v1.mkdir()
    v2.mkdir()
    assert host_checks.freezer(v1, v2).status == "warn"  # neither tree: SIGSTOP
    (v2 / "cgroup.controllers").write_text("cpu io memory\n")
    assert "cgroup v2" in host_checks.freezer(v1, v2).found
    (v1 / "freezer.state").write_text("THAWED\n")
    assert "cgroup v1 freezer" in host_checks.freezer(v1, v2).found


def test_memory_for_two_buffer_pools_and_the_disk(tmp_path):
    gib = 2**30
    assert host_checks.memory(24 * gib, [8 * gib], "seed").status == "ok"        # 2 x (8 + 0.5) = 17 GiB
    short = host_checks.memory(12 * gib, [8 * gib, 1 * gib], "seed")
    assert short.status == "fail" and "needs ~17.0 GiB for two servers" in short.found and "--mode rounds" in short.fix
    assert host_checks.memory(None, [gib], "x").status == "info"
    assert host_checks.disk(tmp_path / "missing").status == "fail"
    assert host_checks.disk(tmp_path, min_free=2**60).status in ("warn",)  # never that much free


@pytest.mark.slow
def test_the_command_prints_each_finding_with_its_fix_and_fails_on_a_failing_check(tmp_path):
    runner, _ = runner_with_hooks(tmp_path, started="job-started", completed="job-completed")
    proc = run_perfci("doctor", "--runner-dir", str(runner))
    assert proc.returncode == 3, proc.stderr
    lines = proc.stdout.splitlines()
    [hook_line] = [line for line in lines if line.startswith("FAIL  runner hooks")]
    assert "actions/runner starts only" in hook_line
    assert any(line.strip().startswith("fix: scripts/runner-bootstrap") for line in lines)
    assert lines[-1].startswith("not ready: ") and "runner hooks" in lines[-1]
    as_json = run_perfci("doctor", "--runner-dir", str(runner), "--json")
    findings = {f["check"]: f for f in json.loads(as_json.stdout)["findings"]}
    assert findings["runner hooks"]["status"] == "fail" and {"sysbench", "freezer", "memory", "disk"} <= set(findings)
    assert findings["CPU profiles (explain pass)"]["status"] in ("ok", "warn")  # a warning at most: verdicts need none
    bad = run_perfci("doctor", "--scenario", "no-such-scenario")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_a_runner_user_in_the_docker_group_is_said_to_be_root_in_practice(tmp_path):
    import grp
    runner = tmp_path / "runner"
    runner.mkdir()
    os.chown(runner, 65534, 65534)  # nobody
    member = grp.struct_group(("docker", "x", 998, ["nobody"]))
    found = host_checks.docker_access(runner, group_of=lambda name: member)
    assert found.status == "warn" and "nobody (the runner's user) is in the docker group" in found.found
    assert "gpasswd -d nobody docker" in found.fix
    outsider = grp.struct_group(("docker", "x", 998, ["alice"]))
    assert host_checks.docker_access(runner, group_of=lambda name: outsider).status == "ok"

    def no_group(name):
        raise KeyError(name)
    assert host_checks.docker_access(runner, group_of=no_group).found == "no docker group on this host"


def test_the_hook_token_is_roots_and_said_to_be_readable_by_every_job(tmp_path):
    runner, _ = runner_with_hooks(tmp_path / "a")
    assert "no PERFCI_HOOK_TOKEN_FILE" in host_checks.hook_token(runner).found
    token = tmp_path / "token"
    token.write_text("t\n")
    with (runner / ".env").open("a") as f:
        f.write(f"PERFCI_HOOK_TOKEN_FILE={token}\n")
    found = host_checks.hook_token(runner)
    assert found.status == "info" and "every job on this runner can read it" in found.found
    os.chown(token, 1000, 1000)
    os.chown(runner, 1000, 1000)
    found = host_checks.hook_token(runner)
    assert found.status == "fail" and "owned by uid 1000" in found.found
