"""The `docker` provider: an official image (mysql, percona/percona-server, mariadb)
run with the Docker CLI.

The generated my.cnf is mounted into the image's include dir, the datadir is a host
directory (the disk under test, and snapshots work as for `local`), the port is
published on 127.0.0.1 only, the container runs as the invoking user, and it is
always removed. Flavor and version come from the server itself (`mysqld --version`
in the image before start, SELECT VERSION() after), never from the tag.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pymysql

from .. import mycnf
from ..capabilities import parse_help_options
from ..errors import BadInput, InfraFailure
from ..flavor import ServerIdentity, identify_version_output
from .accounts import bench_account
from .local import READY_TIMEOUT_S, ask_shutdown, copy_tree, free_port, wait_until_answers

# Where each image family reads extra config, and the server binary's name in it.
INCLUDE_DIRS = {"percona": "/etc/my.cnf.d", "mysql": "/etc/mysql/conf.d", "mariadb": "/etc/mysql/conf.d"}
CONTAINER_DATADIR = "/var/lib/mysql"
CLI_TIMEOUT_S = 120


def image_family(image: str) -> str:
    """mysql / percona / mariadb from the image name (only to pick mount points;
    the flavor recorded in results comes from the server)."""
    name = image.split("@")[0].rsplit(":", 1)[0].lower()
    if "percona" in name:
        return "percona"
    if "mariadb" in name:
        return "mariadb"
    return "mysql"


def docker_cli() -> str:
    found = shutil.which("docker")
    if not found:
        raise BadInput("docker: the docker CLI is not installed (apt-get install docker.io, or use --server local)")
    return found


def run_args(image: str, name: str, port: int, datadir: Path, cnf: Path, uid: int, gid: int) -> list[str]:
    """`docker run` for a benchmark server (the command line, for tests and logs)."""
    family = image_family(image)
    env = {"mariadb": "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1"}.get(family, "MYSQL_ALLOW_EMPTY_PASSWORD=1")
    return ["run", "--detach", "--name", name,
            "--label", "perfci=1",
            "--publish", f"127.0.0.1:{port}:3306",          # loopback only
            "--user", f"{uid}:{gid}",                          # files in the host datadir stay ours
            "--volume", f"{datadir}:{CONTAINER_DATADIR}",
            "--volume", f"{cnf}:{INCLUDE_DIRS[family]}/zz-perfci.cnf:ro",
            "--env", env,
            "--ulimit", "nofile=65535:65535",
            "--shm-size", "1g",
            image]


class DockerServer:
    kind = "docker"
    supports_snapshots = True

    def __init__(self, image: str, workdir: Path):
        self.image = image
        self.docker = docker_cli()
        self.workdir = Path(workdir)
        self.datadir = self.workdir / "data"
        self.cnf_path = self.workdir / "my.cnf"
        self.container = f"perfci-{uuid.uuid4().hex[:10]}"
        self.port: int | None = None
        self.pid: int | None = None
        self._started = False
        self._check_engine()
        self.identity = self._identify()
        self._known: set[str] | None = None

    # -------------------------------------------------------- the CLI

    def _docker(self, *args: str, timeout: float = CLI_TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess:
        try:
            done = subprocess.run([self.docker, *args], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise InfraFailure(f"docker {args[0]}: no answer within {timeout:.0f}s") from None
        if check and done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise InfraFailure(f"docker {args[0]} failed: {first}")
        return done

    def _check_engine(self) -> None:
        done = self._docker("version", "--format", "{{.Server.Version}}", timeout=30, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            why = (done.stderr.strip().splitlines() or ["no server version"])[-1]
            raise InfraFailure(f"docker: no Docker engine answers ({why}); the docker provider needs a "
                               "running engine - use a runner with Docker, or --server local")

    def _in_image(self, *args: str) -> str:
        """Run the image's server binary with `args` (no datadir, removed after)."""
        done = self._docker("run", "--rm", "--entrypoint", "sh", self.image, "-c",
                            '"$(command -v mariadbd || command -v mysqld)" "$@"', "perfci", *args,
                            timeout=600)
        return done.stdout or done.stderr

    def _identify(self) -> ServerIdentity:
        out = self._in_image("--version")
        try:
            return identify_version_output(out)
        except ValueError as exc:
            raise BadInput(f"docker:{self.image}: not a MySQL-family server image ({exc})") from None

    def known_options(self) -> set[str]:
        if self._known is None:
            self._known = parse_help_options(self._in_image("--no-defaults", "--verbose", "--help"))
        return self._known

    def describe(self) -> dict:
        inspect = self._docker("image", "inspect", "--format", "{{index .RepoDigests 0}}", self.image, check=False)
        return {"provider": self.kind, "image": self.image, "image_digest": inspect.stdout.strip() or None}

    @property
    def where(self) -> str:
        return f"docker {self.image}"

    # -------------------------------------------------------- lifecycle

    def start(self, options: dict, restore_from: Path | None = None, timeout_s: float = READY_TIMEOUT_S) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if restore_from is not None:
            copy_tree(restore_from, self.datadir)
        self.datadir.mkdir(exist_ok=True)
        harness = {"bind_address": "0.0.0.0", "port": 3306, "skip_name_resolve": None}  # inside the container
        self.cnf_path.write_text(mycnf.render(harness, options))
        self.port = self.port or free_port()
        self._docker("rm", "--force", self.container, check=False)
        self._docker("run", *run_args(self.image, self.container, self.port, self.datadir, self.cnf_path,
                                      os.getuid(), os.getgid())[1:])
        self._started = True
        self._wait_ready(timeout_s)
        pid = self._docker("inspect", "--format", "{{.State.Pid}}", self.container, check=False).stdout.strip()
        self.pid = int(pid) if pid.isdigit() and int(pid) > 0 else None  # host pid: CPU from /proc works

    def _logs(self) -> str:
        done = self._docker("logs", "--tail", "40", self.container, check=False)
        return (done.stdout + done.stderr).strip()

    def _wait_ready(self, timeout_s: float) -> None:
        def exited() -> str | None:
            state = self._docker("inspect", "--format", "{{.State.Running}}", self.container, check=False).stdout.strip()
            return "the server container exited during start; its log ends with:" if state == "false" else None
        wait_until_answers(self.connect, exited, self._logs, timeout_s, 1.0, "the server container")

    def connect(self, database: str | None = None, **kw) -> pymysql.connections.Connection:
        assert self.port is not None, "connect before start"
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="", database=database,
                               autocommit=True, connect_timeout=5, **kw)

    def bench_connection(self, cur, database: str):
        assert self.port is not None, "bench_connection before start"
        # '%': with a published port, connections arrive from the bridge address
        return bench_account(cur, self.identity, "%", "127.0.0.1", self.port, database, self.workdir)

    def stop(self, slow: bool = False) -> bool:
        if not self._started:
            return False
        clean = ask_shutdown(self.connect, slow, send_shutdown=False)  # `docker stop` shuts it down
        done = self._docker("stop", "--time", "600", self.container, timeout=660, check=False)
        code = self._docker("inspect", "--format", "{{.State.ExitCode}}", self.container, check=False).stdout.strip()
        self._docker("rm", "--force", self.container, check=False)
        self._started = False
        return clean and done.returncode == 0 and code == "0"

    def cleanup(self, keep_workdir: bool = False) -> None:
        if self._started:
            self._docker("rm", "--force", self.container, check=False)
            self._started = False
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
