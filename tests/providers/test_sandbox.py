"""The sandbox a pull request's build runs in (providers/sandbox.py, `perfci sandbox`), run
for real: bubblewrap as an unprivileged account, no servers."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from perfci.providers.sandbox import HIDDEN, account_from, bwrap_argv, switch_argv
from perfci.util.errors import BadInput, InfraFailure

from conftest import REPO, SANDBOX_ACCOUNT, require_tools, run_perfci

UID = int(SANDBOX_ACCOUNT.split(":")[0])


@pytest.fixture
def bwrap(shared_dir):
    """A directory the account may walk to, and bubblewrap."""
    require_tools("bwrap", hint="apt-get install bubblewrap; scripts/install-deps does")
    if os.geteuid() != 0:
        pytest.skip("the tests reach the sandbox account with setpriv, as root")
    return shared_dir


def sandbox(tmp_path: Path, script: str, *extra: str) -> subprocess.CompletedProcess:
    return run_perfci("sandbox", "--account", SANDBOX_ACCOUNT, "--writable", str(tmp_path / "build"), *extra,
                      "--", "sh", "-c", script)


def test_the_command_runs_as_the_account_and_writes_only_where_it_may(bwrap):
    tmp_path = bwrap
    """Removed once: with `--bind / /` for `--ro-bind / /` the write to `outside` landed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "input").write_text("source\n")
    outside = tmp_path / "outside"
    proc = sandbox(tmp_path, f'id -u; cat {tmp_path}/src/input > out; echo x > {outside}; echo x > {tmp_path}/src/y; '
                   'env | sort; true', "--readable", str(tmp_path / "src"), "--env", "CCACHE_DIR=/c")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == str(UID)
    assert (tmp_path / "build" / "out").read_text() == "source\n"
    assert (tmp_path / "build" / "out").stat().st_uid == UID
    assert not outside.exists() and not (tmp_path / "src" / "y").exists()
    # the caller's environment (a token) never crosses: only the fixed names and --env
    assert {line.split("=")[0] for line in lines[1:]} == {"CCACHE_DIR", "HOME", "LANG", "PATH", "PWD"}


def test_homes_and_tmp_are_empty_inside_and_nothing_started_outlives_the_command(bwrap):
    tmp_path = bwrap
    """Removed once: without --unshare-pid the `setsid` sleeper stayed."""
    proc = sandbox(tmp_path, "ls -A /root /home /run | grep -v ':$' | grep . ; "
                             "setsid -f bash -c 'exec -a cc1plus sleep 29170917' </dev/null >/dev/null 2>&1; true")
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout
    found = subprocess.run(["pgrep", "-f", "29170917"], capture_output=True, text=True)
    assert found.stdout == "", "a process of the sandbox outlived it"


def test_the_hosts_loopback_is_out_of_reach(bwrap):
    tmp_path = bwrap
    """Removed once: without --unshare-net the connection was accepted."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        proc = sandbox(tmp_path, f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)'")
        assert proc.returncode != 0
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_the_exit_code_is_the_commands(bwrap):
    tmp_path = bwrap
    assert sandbox(tmp_path, "exit 7").returncode == 7


def test_a_directory_the_account_cannot_walk_to_is_refused_in_one_line(bwrap, tmp_path):
    proc = run_perfci("sandbox", "--account", SANDBOX_ACCOUNT, "--writable", str(tmp_path / "b"), "--", "true")
    assert proc.returncode == 3 and f"cannot reach {tmp_path / 'b'}" in proc.stderr, proc.stderr


def test_no_account_is_an_infrastructure_failure_that_says_how_to_make_one(tmp_path):
    proc = run_perfci("sandbox", "--writable", str(tmp_path), "--", "true",
                      env={"PERFCI_SANDBOX_USER": ""})
    assert proc.returncode == 3 and "no sandbox account" in proc.stderr and "--sandbox-user" in proc.stderr


@pytest.mark.parametrize("spec, error", [("0:0", BadInput), ("root", BadInput), ("x:1", BadInput),
                                         ("no-such-user-here", InfraFailure)])
def test_root_and_unknown_accounts_are_refused(spec, error):
    with pytest.raises(error):
        account_from(spec)


def test_hidden_places_are_mounted_before_the_directories_shown_inside_them():
    argv = bwrap_argv(["make"], writable=[Path("/home/runner/_work/b")], readable=[Path("/tmp/src")],
                      workdir=Path("/home/runner/_work/b"), env={})
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert tmpfs == list(HIDDEN)
    last_tmpfs = len(argv) - 1 - argv[::-1].index("--tmpfs")
    assert last_tmpfs < argv.index("--ro-bind", 5) < argv.index("--bind")
    assert argv[argv.index("--bind"):argv.index("--bind") + 3] == ["--bind", "/home/runner/_work/b"] * 1 + ["/home/runner/_work/b"]
    assert argv[-1] == "make" and "--unshare-all" in argv and "--clearenv" in argv


def test_a_directory_shown_at_another_path_is_bound_there_after_the_others():
    argv = bwrap_argv(["ninja"], writable=[Path("/w/install")], readable=[], workdir=Path("/kept/tree"), env={},
                      writable_at={Path("/w/job/tree"): Path("/kept/tree")})
    binds = [argv[i:i + 3] for i, a in enumerate(argv) if a == "--bind"]
    assert binds == [["--bind", "/w/install", "/w/install"], ["--bind", "/w/job/tree", "/kept/tree"]]
    proc = run_perfci("sandbox", "--account", SANDBOX_ACCOUNT, "--writable-at", "tree=relative", "--", "true")
    assert proc.returncode == 2 and "DIR=SHOWN_AT, SHOWN_AT an absolute path" in proc.stderr, proc.stderr


def test_a_runner_user_becomes_the_account_through_the_one_sudo_rule():
    account = account_from(SANDBOX_ACCOUNT)
    assert switch_argv(account, as_root=False) == ["sudo", "-n", "-u", f"#{UID}", "--"]
    assert switch_argv(account, as_root=True)[0] == "setpriv"


def committed(src: Path, message: str, *, first: bool = False) -> str:
    """Everything in SRC committed (a new repository on main when FIRST); the commit."""
    if first:
        subprocess.run(["git", "-C", str(src), "init", "-q", "-b", "main"], check=True)
    subprocess.run(["git", "-C", str(src), "add", "."], check=True)
    subprocess.run(["git", "-C", str(src), "-c", "user.name=d", "-c", "user.email=d@e", "commit", "-qm", message],
                   check=True)
    return subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def c_server_source(src: Path) -> str:
    """A git repository whose build compiles one C file through ccache into sbin/mariadbd;
    its first commit (main)."""
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(t C)\n"
                                        "add_executable(mariadbd t.c)\ninstall(TARGETS mariadbd DESTINATION sbin)\n")
    (src / "t.c").write_text("int main(void) { return 0; }\n")
    return committed(src, "t", first=True)


@pytest.mark.slow
def test_a_ccache_config_one_pull_request_planted_is_not_read_by_the_next_build(bwrap):
    """The compiler cache is writable by every pull request's build; one writes a
    ccache.conf whose prefix_command runs its script. The next sandboxed build (a real C
    compile through ccache) never runs it. (Removed once: without CCACHE_CONFIGPATH the
    script ran and left its mark in the build tree.)"""
    require_tools("cc", "ccache", "cmake", "ninja", hint="scripts/install-deps installs them")
    src = bwrap / "src"
    c_server_source(src)
    cache = bwrap / "cache"
    ccache = cache / "ccache" / "mariadb"
    ccache.mkdir(parents=True)
    (ccache / "evil.sh").write_text('#!/bin/sh\ntouch "$PWD/planted-ran"\nexec "$@"\n')
    (ccache / "evil.sh").chmod(0o755)
    (ccache / "ccache.conf").write_text(f"prefix_command = {ccache / 'evil.sh'}\n")
    # (the host may be busy: scripts/check runs the unit tests on both cores, and a sandboxed build,
    # holding the host without yielding, would otherwise wait for them and refuse)
    env = {**os.environ, "PERFCI_CACHE": str(cache), "PERFCI_BUILD_REPO": str(src), "PERFCI_HOST_WAIT": "60",
           "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT, "PERFCI_ALLOW_BUSY": "1"}
    proc = subprocess.run([str(REPO / "scripts" / "build-server"), "mariadb", "main"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (Path(proc.stdout.strip()) / "sbin" / "mariadbd").is_file()
    assert not list(cache.rglob("planted-ran")), "the planted prefix_command ran"


@pytest.mark.slow
def test_a_pull_requests_build_leaves_nothing_a_later_base_build_takes(bwrap):
    """A server-code check's job: the base commit builds in the caches kept between jobs,
    the PR's commit in the job's scratch dir. The PR's configure step tries to plant an
    object in the kept build tree, a binary in the base's cached install and entries in
    the base builds' compiler cache: every write fails, its own build still reads the
    base's ccache (a hit for the unchanged file). (Removed once: with the PR's commit
    built as the trusted one, the object and the cache entry landed; the base's install
    is read-only to every build.)"""
    require_tools("cc", "ccache", "cmake", "ninja", hint="scripts/install-deps installs them")
    src = bwrap / "src"
    base = c_server_source(src)
    cache, scratch = bwrap / "cache", bwrap / "cache" / "jobs" / "pr-1"
    scratch.mkdir(parents=True)
    env = {**os.environ, "PERFCI_CACHE": str(cache), "PERFCI_BUILD_REPO": str(src), "PERFCI_HOST_WAIT": "60",
           "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT, "PERFCI_ALLOW_BUSY": "1", "PERFCI_BUILD_SCRATCH": str(scratch),
           "PERFCI_BUILD_TRUSTED_COMMIT": base}

    def build(ref: str) -> Path:
        proc = subprocess.run([str(REPO / "scripts" / "build-server"), "mariadb", ref], env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return Path(proc.stdout.strip())

    base_dir = build("main")
    assert base_dir.parent == cache / "builds" and (base_dir / "sbin" / "mariadbd").is_file()
    [tree] = (cache / "builds" / ".trees").iterdir()
    base_store = cache / "ccache" / "mariadb.base"
    assert [p for p in base_store.rglob("*") if p.is_file()]  # the base's compile, kept for every later job
    targets = [tree / "CMakeFiles" / "planted.o", base_dir / "sbin" / "planted", base_store / "planted"]
    plant = "".join(f'execute_process(COMMAND sh -c "echo poison > {t}")\n' for t in targets)
    (src / "CMakeLists.txt").write_text((src / "CMakeLists.txt").read_text() + plant)
    committed(src, "pr")
    head_dir = build("main")
    assert head_dir.parent == scratch / "builds" and (head_dir / "sbin" / "mariadbd").is_file()
    assert [t for t in targets if t.exists()] == []
    info = json.loads((head_dir / "perfci-build.json").read_text())
    assert info["ccache_hits"] >= 1, info  # t.c, compiled by the base's build, read from its store


@pytest.mark.slow
def test_a_mysql_trees_boost_is_fetched_outside_the_sandbox_from_boosts_archive(bwrap):
    """MySQL's configure would download Boost (the URL its cmake/boost.cmake names); the
    sandbox has no network. build-server fetches the version the tree names from Boost's
    release archive (here a file:// stand-in), before and outside the sandbox, once, and
    the sandboxed configure finds it read-only. (Removed once: without the fetch, the
    configure found no Boost.)"""
    require_tools("cmake", "ninja", "curl", "bzip2", hint="scripts/install-deps installs them")
    archive = bwrap / "archive"
    package = archive / "unpacked" / "boost_1_77_0"
    (package / "boost").mkdir(parents=True)
    (package / "boost" / "version.hpp").write_text("#define BOOST_VERSION 107700\n")
    (archive / "1.77.0" / "source").mkdir(parents=True)
    tarball = archive / "1.77.0" / "source" / "boost_1_77_0.tar.bz2"
    subprocess.run(["tar", "-cjf", str(tarball), "-C", str(package.parent), "boost_1_77_0"], check=True)
    src = bwrap / "src"
    (src / "cmake").mkdir(parents=True)
    (src / "cmake" / "boost.cmake").write_text('SET(BOOST_PACKAGE_NAME "boost_1_77_0")\n'
                                               'SET(BOOST_DOWNLOAD_URL "https://example.invalid/boost.tar.bz2")\n')
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(t NONE)\n"
        'if(NOT EXISTS "${WITH_BOOST}/boost/version.hpp")\n  message(FATAL_ERROR "no Boost at ${WITH_BOOST}")\n'
        'endif()\nfile(WRITE "${CMAKE_BINARY_DIR}/mysqld" "#!/bin/sh\\n")\n'
        "install(PROGRAMS ${CMAKE_BINARY_DIR}/mysqld DESTINATION bin)\n")
    committed(src, "t", first=True)
    cache = bwrap / "cache"
    env = {**os.environ, "PERFCI_CACHE": str(cache), "PERFCI_BUILD_REPO": str(src), "PERFCI_HOST_WAIT": "60",
           "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT, "PERFCI_ALLOW_BUSY": "1",
           "PERFCI_BOOST_ARCHIVE": f"file://{archive}"}
    proc = subprocess.run([str(REPO / "scripts" / "build-server"), "mysql", "main"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"fetching file://{tarball} (outside the sandbox)" in proc.stderr
    fetched = cache / "src" / "boost" / "boost_1_77_0"
    info = json.loads((Path(proc.stdout.strip()) / "perfci-build.json").read_text())
    assert f"-DWITH_BOOST={fetched}" in info["cmake_flags"] and "-DDOWNLOAD_BOOST=ON" not in info["cmake_flags"]
    assert (fetched / "perfci-fetched.sha256").read_text().strip() == hashlib.sha256(tarball.read_bytes()).hexdigest()
    # the next commit's build uses what was fetched: the archive is not asked again
    tarball.unlink()
    (src / "README").write_text("next\n")
    committed(src, "next")
    proc = subprocess.run([str(REPO / "scripts" / "build-server"), "mysql", "main"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "fetching" not in proc.stderr, proc.stderr


def test_a_runner_user_signals_a_sandboxed_server_through_the_rules_kill_and_counts_none(monkeypatch):
    """Root enters the sandbox (vgdb); a runner user cannot (bubblewrap nests its user
    namespace) and says so in one line; its signals go by host pid through `kill` as the
    account; `--measure auto` times a sandboxed server rather than fail, and the explain
    pass says why it cannot profile one."""
    from perfci.providers.sandbox import entering_argv, signal_argv
    from perfci.run import work
    account = account_from(SANDBOX_ACCOUNT)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert entering_argv(account, 4242, ["vgdb"])[:3] == ["nsenter", "--target=4242", "--user"]
    assert work.tool_missing("callgrind") in (None, "valgrind and vgdb not found: counting work with callgrind needs "
                                              "valgrind (Debian: apt-get install valgrind)")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(InfraFailure, match="needs perfci to run as root"):
        entering_argv(account, 4242, ["vgdb"])
    assert signal_argv(account, 4242, 19) == ["sudo", "-n", "-u", f"#{UID}", "--", "kill", "-19", "4242"]
    monkeypatch.setenv("PERFCI_SANDBOX_USER", SANDBOX_ACCOUNT)
    monkeypatch.setenv("PERFCI_SANDBOX_SERVERS", "/var/lib/perfci-pr/servers")
    assert "perfci is not root" in (work.tool_missing("callgrind") or "")
    assert "perfci is not root" in (work.tool_missing("pmu") or "")
    from perfci.run import profiler
    monkeypatch.setattr(profiler, "tool", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(profiler, "paranoid_level", lambda: 2)
    assert "perf may not profile another user's process" in (profiler.why_no_profiles() or "")


@pytest.mark.parametrize("env, error, said", [
    ({"PERFCI_SANDBOX_SERVERS": "servers", "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT}, BadInput, "an absolute directory"),
    ({"PERFCI_SANDBOX_SERVERS": "/srv/x"}, InfraFailure, "no sandbox account (PERFCI_SANDBOX_USER)"),
])
def test_sandboxed_servers_need_an_absolute_directory_and_an_account(env, error, said):
    from perfci.providers.local import sandboxed_servers
    assert sandboxed_servers({}) is None
    with pytest.raises(error, match=said.replace("(", r"\(").replace(")", r"\)")):
        sandboxed_servers(env)
    account, area = sandboxed_servers({"PERFCI_SANDBOX_SERVERS": "/srv/x", "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT})
    assert (account.uid, area) == (UID, Path("/srv/x"))
