"""Where untrusted code runs: a pull request's configure, build and install.

The code runs as the sandbox account (another user than the runner's, made by
scripts/runner-bootstrap), inside bubblewrap namespaces:
- no network (a network namespace of its own: not even the host's loopback);
- its own process namespace: every process it starts, a `setsid` one included, is
  killed when the command ends;
- the file system read-only; homes, /tmp, /var/tmp and /run empty (throwaway tmpfs),
  so neither the runner user's home (git config, caches, ~/.cargo/bin) nor a socket
  of the host is in reach; writable only the directories named (the build's own);
- no environment but a fixed PATH, HOME=/tmp and what the caller names: no token.
The account switch: setpriv when perfci runs as root, else `sudo -n -u ACCOUNT bwrap`
(runner-bootstrap's rule; its second command, `kill` as the account, signals a sandboxed
server: the freezer's fallback, a stuck shutdown). A writable directory must be the account's to
write: root hands it over (chown); a runner user makes it group-writable for the
sandbox's group, which runner-bootstrap gives it (setgid, so new files stay shared).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfci.util.errors import BadInput, InfraFailure

ACCOUNT_ENV = "PERFCI_SANDBOX_USER"
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# emptied inside: every user's home and every place a host socket or temp file lives
HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/run")
PR_AREA = "/var/lib/perfci-pr"  # where runner-bootstrap lets pull requests' builds live
BOOTSTRAP = "scripts/runner-bootstrap RUNNER_DIR --sandbox-user ACCOUNT (as root)"


@dataclass(frozen=True)
class Account:
    """The unprivileged account untrusted code runs as."""

    name: str  # a user name, or "#UID" for an account without a passwd entry (tests)
    uid: int
    gid: int


def account_from(spec: str) -> Account:
    """`perfci-sandbox` (a user of this host) or `UID:GID`."""
    if ":" in spec:
        uid, _, gid = spec.partition(":")
        if not (uid.isdigit() and gid.isdigit()) or int(uid) == 0:
            raise BadInput(f"{ACCOUNT_ENV}={spec!r}: a user name or UID:GID with a UID other than 0")
        return Account(f"#{uid}", int(uid), int(gid))
    try:
        entry = pwd.getpwnam(spec)
    except KeyError:
        raise InfraFailure(f"{ACCOUNT_ENV}={spec!r}: no such user on this host; make it with {BOOTSTRAP}") from None
    if entry.pw_uid == 0:
        raise BadInput(f"{ACCOUNT_ENV}={spec!r}: root is no sandbox; name an unprivileged account")
    return Account(spec, entry.pw_uid, entry.pw_gid)


def configured_account(env: Mapping[str, str] | None = None) -> Account | None:
    spec = (os.environ if env is None else env).get(ACCOUNT_ENV, "").strip()
    return account_from(spec) if spec else None


def bwrap_argv(argv: Sequence[str], *, bwrap: str = "bwrap", writable: Sequence[Path], readable: Sequence[Path],
               workdir: Path, env: Mapping[str, str], writable_at: Mapping[Path, Path] | None = None) -> list[str]:
    """bubblewrap's command line (run as the account): the mounts in order, hidden
    places first so that a directory inside one is bound over its tmpfs. The command is
    pid 2 of its own process namespace (bubblewrap's init is 1): whatever it starts,
    `setsid` or not, ends when it does."""
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
           "--dev", "/dev", "--proc", "/proc"]
    for hidden in HIDDEN:
        cmd += ["--tmpfs", hidden]
    for path in readable:
        cmd += ["--ro-bind", str(path), str(path)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
    for path, shown_at in (writable_at or {}).items():
        cmd += ["--bind", str(path), str(shown_at)]
    cmd += ["--clearenv", "--setenv", "PATH", SAFE_PATH, "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    # umask 002: what the build writes stays writable for the runner user (the shared group)
    return [*cmd, "--chdir", str(workdir), "--", "/bin/sh", "-c", 'umask 002 && exec "$@"', "sandbox", *argv]


def switch_argv(account: Account, as_root: bool) -> list[str]:
    """How the runner's process becomes the account."""
    if as_root:
        return ["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups", "--inh-caps=-all"]
    return ["sudo", "-n", "-u", account.name, "--"]


def sandboxed_argv(argv: Sequence[str], account: Account, *, writable: Sequence[Path], readable: Sequence[Path] = (),
                   workdir: Path | None = None, env: Mapping[str, str] | None = None,
                   writable_at: Mapping[Path, Path] | None = None) -> list[str]:
    """The command line that runs `argv` as `account` in the sandbox, its writable
    directories made the account's first (for a caller that starts it itself: a server).
    `writable_at` shows a writable directory at another path (made if missing, left as it
    is): a pull request's fresh build tree where the kept tree is, so that its compiles
    look like the base's to ccache and the kept tree is never written."""
    bwrap = shutil.which("bwrap")  # by its path: the sudo rule names /usr/bin/bwrap
    if bwrap is None:
        raise InfraFailure("the sandbox needs bubblewrap (Debian package bubblewrap; scripts/install-deps installs it)")
    as_root = os.geteuid() == 0
    shown = {Path(k): Path(v) for k, v in (writable_at or {}).items()}
    for path in [*writable, *shown]:
        _hand_over(Path(path), account, as_root)
    for shown_at in shown.values():
        shown_at.mkdir(parents=True, exist_ok=True)
    for path in [*readable, *writable, *shown, *shown.values()]:
        _check_reachable(Path(path), account)
    where = Path(workdir) if workdir is not None else (Path(writable[0]) if writable else Path("/"))
    return [*switch_argv(account, as_root),
            *bwrap_argv(argv, bwrap=bwrap, writable=writable, readable=readable, workdir=where, env=env or {},
                        writable_at=shown)]


def run_sandboxed(argv: Sequence[str], account: Account, *, writable: Sequence[Path], readable: Sequence[Path] = (),
                  workdir: Path | None = None, env: Mapping[str, str] | None = None,
                  writable_at: Mapping[Path, Path] | None = None) -> int:
    """Run `argv` as `account` in the sandbox; the command's exit code."""
    return subprocess.call(sandboxed_argv(argv, account, writable=writable, readable=readable, workdir=workdir,
                                          env=env, writable_at=writable_at))


def entering_argv(account: Account, host_pid: int, argv: Sequence[str]) -> list[str]:
    """A trusted tool run inside a running sandbox (whose command is `host_pid` on the
    host), in all its namespaces and as its account: vgdb finds valgrind by the pid
    valgrind knows itself by, and its invoker may trace it only from inside its user
    namespace (from outside, even root's invocation never returns). Its process is then
    the sandbox's to trace, so it holds nothing the sandbox lacks. Root only: bubblewrap
    run by a user nests the sandbox's user namespace in one no process is in, and from
    there its other namespaces cannot be entered."""
    if os.geteuid() != 0:
        raise InfraFailure("entering a running sandbox (vgdb, to count a sandboxed server's work) needs perfci to "
                           "run as root; a runner user counts no sandboxed server (--measure time)")
    return ["nsenter", f"--target={host_pid}", "--user", "--pid", "--mount", "--net", "--ipc", "--uts",
            f"--setuid={account.uid}", f"--setgid={account.gid}", "--", *argv]


def signal_argv(account: Account, host_pid: int, sig: int) -> list[str]:
    """How a runner user signals a sandboxed process: `kill` as the account (the second
    command of runner-bootstrap's sudo rule); signals go by the process's host pid."""
    return ["sudo", "-n", "-u", account.name, "--", "kill", f"-{int(sig)}", str(host_pid)]


def sandbox_command(host_pid: int) -> tuple[int, int] | None:
    """(host pid, pid inside) of the command a sandbox started under `host_pid` (setpriv's
    bubblewrap, or sudo's): the first process below it in a process namespace of its own
    that is not that namespace's init. None while it is not running."""
    children: dict[int, list[int]] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat_file.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(stat_file.parent.name))
    todo = [host_pid]
    while todo:
        pid = todo.pop(0)
        inner = _pid_inside(pid)
        if inner is not None and inner > 1:
            return pid, inner
        todo.extend(sorted(children.get(pid, [])))
    return None


def _pid_inside(pid: int) -> int | None:
    """The pid a process has in its innermost namespace, when that is not the host's."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                pids = line.split()[1:]
                return int(pids[-1]) if len(pids) > 1 else None
    except OSError:
        return None
    return None


def _check_reachable(path: Path, account: Account) -> None:
    """bubblewrap binds a directory by its path, as the account: every directory above
    it must let the account pass (a runner's home, 0700, does not)."""
    for above in reversed(path.absolute().parents):
        info = above.stat()
        if info.st_uid == account.uid:
            passes = bool(info.st_mode & stat.S_IXUSR)
        elif info.st_gid == account.gid:
            passes = bool(info.st_mode & stat.S_IXGRP)
        else:
            passes = bool(info.st_mode & stat.S_IXOTH)
        if not passes:
            raise InfraFailure(f"sandbox: {account.name} cannot reach {path}: {above} (mode "
                               f"{stat.S_IMODE(info.st_mode):04o}, uid {info.st_uid}) does not let it pass; keep a "
                               f"pull request's build under a directory it may walk ({PR_AREA}, made by "
                               f"scripts/runner-bootstrap)")


def _hand_over(path: Path, account: Account, as_root: bool) -> None:
    """Make `path` (made if missing) and what it holds writable for the account (a tree an
    earlier unsandboxed build left, a datadir restored from a snapshot), nothing above it."""
    path.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise InfraFailure(f"sandbox: {path} is a symbolic link; a writable directory must be a directory")
    for root, dirs, files in os.walk(path):
        for name in (root, *(os.path.join(root, n) for n in dirs + files)):
            info = os.lstat(name)
            if as_root:
                if info.st_uid != account.uid:
                    os.lchown(name, account.uid, account.gid)
            elif info.st_uid == os.geteuid() and not stat.S_ISLNK(info.st_mode):
                _share_with_group(Path(name), info, account)


def _share_with_group(path: Path, info: os.stat_result, account: Account) -> None:
    """A runner user's file or directory, group-writable for the account's group (a
    directory setgid: what is made in it stays shared)."""
    if info.st_gid != account.gid:
        try:
            os.chown(path, -1, account.gid)
        except PermissionError:
            group = _group_name(account.gid)
            raise InfraFailure(f"sandbox: {path} cannot be given to the group {group} of {account.name}: this user "
                               f"is not in it; {BOOTSTRAP} adds the runner user") from None
    extra = stat.S_IRWXG | stat.S_ISGID if stat.S_ISDIR(info.st_mode) else stat.S_IRGRP | stat.S_IWGRP
    path.chmod(stat.S_IMODE(info.st_mode) | extra)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
