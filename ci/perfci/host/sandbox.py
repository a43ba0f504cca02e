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
(the one rule runner-bootstrap writes). A writable directory must be the account's to
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
               workdir: Path, env: Mapping[str, str]) -> list[str]:
    """bubblewrap's command line (run as the account): the mounts in order, hidden
    places first so that a directory inside one is bound over its tmpfs."""
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
           "--dev", "/dev", "--proc", "/proc"]
    for hidden in HIDDEN:
        cmd += ["--tmpfs", hidden]
    for path in readable:
        cmd += ["--ro-bind", str(path), str(path)]
    for path in writable:
        cmd += ["--bind", str(path), str(path)]
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


def run_sandboxed(argv: Sequence[str], account: Account, *, writable: Sequence[Path], readable: Sequence[Path] = (),
                  workdir: Path | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run `argv` as `account` in the sandbox, its writable directories made the
    account's first; the command's exit code."""
    bwrap = shutil.which("bwrap")  # by its path: the sudo rule names /usr/bin/bwrap
    if bwrap is None:
        raise InfraFailure("the sandbox needs bubblewrap (Debian package bubblewrap; scripts/install-deps installs it)")
    as_root = os.geteuid() == 0
    for path in writable:
        _hand_over(Path(path), account, as_root)
    for path in [*readable, *writable]:
        _check_reachable(Path(path), account)
    where = Path(workdir) if workdir is not None else (Path(writable[0]) if writable else Path("/"))
    return subprocess.call([*switch_argv(account, as_root),
                            *bwrap_argv(argv, bwrap=bwrap, writable=writable, readable=readable, workdir=where,
                                        env=env or {})])


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
    """Make `path` (made if missing) writable for the account, and nothing above it."""
    path.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise InfraFailure(f"sandbox: {path} is a symbolic link; a writable directory must be a directory")
    if as_root:
        for root, dirs, files in os.walk(path):  # a tree an earlier unsandboxed build left
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                if os.lstat(name).st_uid != account.uid:
                    os.lchown(name, account.uid, account.gid)
        return
    info = path.stat()
    if info.st_gid != account.gid:
        try:
            os.chown(path, -1, account.gid)
        except PermissionError:
            group = _group_name(account.gid)
            raise InfraFailure(f"sandbox: {path} cannot be given to the group {group} of {account.name}: this user "
                               f"is not in it; {BOOTSTRAP} adds the runner user") from None
    path.chmod(stat.S_IMODE(info.st_mode) | stat.S_IRWXG | stat.S_ISGID)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
