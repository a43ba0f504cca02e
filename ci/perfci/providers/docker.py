"""The `docker` provider: an image (official mysql, percona/percona-server, mariadb, or
a `perfci-local/...` image from scripts/build-local-images) run with the Docker CLI.

The generated my.cnf is mounted into the image's include dir and the datadir is a host
directory (the disk under test; snapshots work as for `local`). By default the container
shares the host's network and the server binds 127.0.0.1 on a free port (no docker-proxy
or NAT between sysbench and the server); `#network=published` publishes 3306 on
127.0.0.1 instead. The server never runs as root: the runner's own uid, or, when perfci
runs as root, the image's `mysql` account (Percona's image does not step down from root
itself, and mysqld refuses root). Containers carry the label perfci=1 and their owner's
pid; a run removes its own at the end and any whose owner is gone at the start. Flavor
and version come from the server itself, never from the tag.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pymysql

from perfci.model.flavor import ServerIdentity, identify_version_output
from perfci.providers import mycnf
from perfci.providers.accounts import bench_account
from perfci.providers.capabilities import KnownOptions, parse_help_options
from perfci.providers.local import DEATH_GRACE_S, READY_TIMEOUT_S, ask_shutdown, copy_tree, free_port, wait_until_answers
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.runner import RUNNER_LABEL, runner_tag, temp_prefix

# Where each image family reads extra config (Percona: /etc/my.cnf's !includedir).
INCLUDE_DIRS = {"percona": "/etc/my.cnf.d", "mysql": "/etc/mysql/conf.d", "mariadb": "/etc/mysql/conf.d"}
# What each family's entrypoint needs to initialise an empty datadir with a password-less
# root that exists only as root@localhost: reachable on the socket alone, which lives in a
# host directory only perfci's user (and the server's account) can enter; no root@'%' a
# local user could reach over TCP (and, for Percona, no telemetry agent calling home).
ENTRYPOINT_ENV = {
    "mysql": ("MYSQL_ALLOW_EMPTY_PASSWORD=1", "MYSQL_ROOT_HOST=localhost"),
    "percona": ("MYSQL_ALLOW_EMPTY_PASSWORD=1", "MYSQL_ROOT_HOST=localhost", "PERCONA_TELEMETRY_DISABLE=1"),
    "mariadb": ("MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1", "MARIADB_ROOT_HOST=localhost"),
}
CONTAINER_DATADIR = "/var/lib/mysql"
# The container's end of the private host directory: the server's socket (perfci's only
# way in as root) and the one directory it may read or write files in (secure_file_priv).
CONTAINER_RUN_DIR = "/run/perfci"
CLI_TIMEOUT_S = 120
# images built on this host from verified servers (providers/localimages.py): no registry digest
LOCAL_IMAGE_PREFIX = "perfci-local/"
LABEL = "perfci=1"
OWNER_LABEL = "perfci.owner-pid"


def image_family(image: str) -> str:
    """mysql / percona / mariadb from the image name (only to pick mount points and
    entrypoint settings; the flavor recorded in results comes from the server)."""
    name = image.split("@")[0].rsplit(":", 1)[0].lower()
    if "percona" in name:
        return "percona"
    if "mariadb" in name:
        return "mariadb"
    return "mysql"


def container_exit(code: int) -> str:
    """A container's exit code in words (128+N: the server was killed by signal N)."""
    return f"killed by signal {code - 128}" if code > 128 else f"exit code {code}"


def docker_cli() -> str:
    found = shutil.which("docker")
    if not found:
        raise BadInput("docker: the docker CLI is not installed (scripts/install-deps installs an engine; "
                       "or use --server local)")
    return found


def cli_error(stderr: str) -> str:
    """The line of the CLI's stderr that says what went wrong (not its usage hint)."""
    lines = [line.strip() for line in stderr.splitlines()
             if line.strip() and not line.startswith("Run 'docker")]
    return lines[0].removeprefix("docker: ") if lines else "(no output)"


def container_user(runner: tuple[int, int], image_mysql: tuple[int, int] | None) -> tuple[int, int]:
    """The uid:gid the server runs as: never root. A non-root runner's own ids (the host
    datadir stays its own); a root runner's server runs as the image's mysql account."""
    if runner[0] != 0:
        return runner
    if image_mysql is None or image_mysql[0] == 0:
        raise BadInput("docker: the image has no non-root 'mysql' account to run the server as "
                       "(mysqld refuses to run as root)")
    return image_mysql


def harness_options(network: str, port: int) -> dict:
    """my.cnf settings perfci owns inside the container."""
    private = {"socket": f"{CONTAINER_RUN_DIR}/mysqld.sock", "secure_file_priv": f"{CONTAINER_RUN_DIR}/files"}
    if network == "host":  # the host's network namespace: the server itself binds loopback
        return {"bind_address": "127.0.0.1", "port": port, "skip_name_resolve": None, **private}
    return {"bind_address": "0.0.0.0", "port": 3306, "skip_name_resolve": None, **private}  # behind the published port


def run_args(image: str, name: str, port: int, datadir: Path, cnf: Path, user: tuple[int, int],
             network: str = "host", owner_pid: int = 0, run_dir: Path | None = None) -> list[str]:
    """`docker run` for a benchmark server (the command line, for tests and logs)."""
    family = image_family(image)
    net = ["--network", "host"] if network == "host" else ["--publish", f"127.0.0.1:{port}:3306"]  # loopback only
    env = [arg for value in ENTRYPOINT_ENV[family] for arg in ("--env", value)]
    tag = runner_tag()
    return ["run", "--detach", "--name", name,
            "--label", LABEL, "--label", f"{OWNER_LABEL}={owner_pid}",
            *(["--label", f"{RUNNER_LABEL}={tag}"] if tag else []),  # the job-completed hook of this runner only
            *net,
            "--user", f"{user[0]}:{user[1]}",
            "--volume", f"{datadir}:{CONTAINER_DATADIR}",
            *(["--volume", f"{run_dir}:{CONTAINER_RUN_DIR}"] if run_dir else []),
            "--volume", f"{cnf}:{INCLUDE_DIRS[family]}/zz-perfci.cnf:ro",
            *env,
            "--shm-size", "1g",
            image]


def private_run_dir(user: tuple[int, int]) -> Path:
    """A 0700 host directory for the container's socket and files, owned by the server's
    account (perfci, as root, still enters it; nobody else on the host can)."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{temp_prefix()}run-"))  # short: sun_path is 108 bytes
    (run_dir / "files").mkdir(mode=0o700)
    if os.getuid() == 0:
        for path in (run_dir, run_dir / "files"):
            os.chown(path, *user)
    return run_dir


def stale_containers(listing: str, alive, runner: str | None = None) -> list[str]:
    """Ids of perfci containers (`docker ps` lines "ID OWNER-PID RUNNER-TAG") of this
    runner (`runner`: its tag, or None outside a runner: containers of no runner) whose
    owner is gone: left by a killed run. A container of a live perfci process, or of
    another runner on the host (whose owner this process may not see: another PID
    namespace), is not ours to remove."""
    stale = []
    for line in listing.splitlines():
        cid, owner, tag = (line.strip().split(" ") + ["", "", ""])[:3]
        if cid and (tag or None) == runner and not (owner.isdigit() and alive(int(owner))):
            stale.append(cid)
    return stale


def remove_orphan_containers() -> list[str]:
    """Remove perfci containers whose owning process is gone (a killed job, a SIGKILLed
    run); called with the host lock held, before the busy check would count their
    servers. Quiet and quick where there is no docker CLI or engine."""
    cli = shutil.which("docker")
    if cli is None:
        return []
    try:
        listing = subprocess.run([cli, "ps", "--all", "--filter", f"label={LABEL}", "--format",
                                  f'{{{{.ID}}}} {{{{.Label "{OWNER_LABEL}"}}}} {{{{.Label "{RUNNER_LABEL}"}}}}'],
                                 capture_output=True, text=True, timeout=30)
        stale = stale_containers(listing.stdout, pid_alive, runner_tag()) if listing.returncode == 0 else []
        if stale:
            subprocess.run([cli, "rm", "--force", *stale], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return []
    return stale


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


class DockerServer:
    kind = "docker"
    supports_snapshots = True

    def __init__(self, image: str, workdir: Path, network: str = "host"):
        self.image = image
        self.network = network
        self.docker = docker_cli()
        self.workdir = Path(workdir)
        self.datadir = self.workdir / "data"
        self.cnf_path = self.workdir / "my.cnf"
        self.container = f"perfci-{uuid.uuid4().hex[:10]}"
        self.port: int | None = None
        self.pid: int | None = None
        self.run_dir: Path | None = None  # the socket and secure_file_priv: see CONTAINER_RUN_DIR
        self._started = False
        self._check_engine()
        remove_orphan_containers()
        self._ensure_image()
        self.image_id = self._verified_image_id()  # every container runs this, not the tag (which can move)
        self.user = container_user((os.getuid(), os.getgid()), self._image_mysql_ids())
        self.identity = self._identify()
        self._known: KnownOptions | None = None

    # -------------------------------------------------------- the CLI

    def _docker(self, *args: str, timeout: float = CLI_TIMEOUT_S, check: bool = True) -> subprocess.CompletedProcess:
        try:
            done = subprocess.run([self.docker, *args], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise InfraFailure(f"docker {args[0]}: no answer within {timeout:.0f}s") from None
        if check and done.returncode != 0:
            raise InfraFailure(f"docker {args[0]} failed: {cli_error(done.stderr)}")
        return done

    def _check_engine(self) -> None:
        done = self._docker("version", "--format", "{{.Server.Version}}", timeout=30, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            why = cli_error(done.stderr) if done.stderr.strip() else "no server version"
            raise InfraFailure(f"docker: no Docker engine answers ({why}); the docker provider needs a "
                               "running engine (scripts/install-deps starts one) - or use --server local")

    def _ensure_image(self) -> None:
        if self._docker("image", "inspect", "--format", "{{.Id}}", self.image.split("@")[0],
                        check=False).returncode == 0:
            return
        if self.image.startswith(LOCAL_IMAGE_PREFIX):
            raise BadInput(f"docker:{self.image}: not on this host; scripts/build-local-images builds it")
        done = self._docker("pull", "--quiet", self.image, timeout=1800, check=False)
        if done.returncode != 0:
            why = cli_error(done.stderr)
            raise InfraFailure(f"docker:{self.image}: not on this host and cannot be pulled ({why})")

    def _verified_image_id(self) -> str:
        """The local image's id, checked against the spec's digest when it names one (a
        registry digest in RepoDigests, or the image id itself for a local build)."""
        done = self._docker("image", "inspect", "--format", "{{.Id}}{{range .RepoDigests}} {{.}}{{end}}",
                            self.image.split("@")[0])
        image_id, *repo_digests = done.stdout.split()
        digest = self.image.partition("@")[2]
        if digest and digest != image_id and not any(d.endswith(f"@{digest}") for d in repo_digests):
            raise BadInput(f"docker:{self.image}: the local image is {image_id} "
                           f"({', '.join(repo_digests) or 'no registry digest'}), not the pinned {digest}: refused")
        return image_id

    def _in_image(self, *args: str, user: str | None = None) -> str:
        """Run the image's server binary with `args` (no datadir, removed after)."""
        as_user = ["--user", user] if user else []
        done = self._docker("run", "--rm", "--network", "none", *as_user, "--entrypoint", "sh", self.image_id, "-c",
                            '"$(command -v mariadbd || command -v mysqld)" "$@"', "perfci", *args,
                            timeout=600)
        return done.stdout or done.stderr

    def _image_mysql_ids(self) -> tuple[int, int] | None:
        done = self._docker("run", "--rm", "--network", "none", "--entrypoint", "sh", self.image_id, "-c",
                            "id -u mysql && id -g mysql", check=False)
        ids = done.stdout.split()
        return (int(ids[0]), int(ids[1])) if done.returncode == 0 and len(ids) == 2 and all(
            i.isdigit() for i in ids) else None

    def _identify(self) -> ServerIdentity:
        out = self._in_image("--version", user=f"{self.user[0]}:{self.user[1]}")
        try:
            return identify_version_output(out)
        except ValueError as exc:
            raise BadInput(f"docker:{self.image}: not a MySQL-family server image ({exc})") from None

    def known_options(self) -> KnownOptions:
        if self._known is None:
            self._known = parse_help_options(self._in_image("--no-defaults", "--verbose", "--help",
                                                            user=f"{self.user[0]}:{self.user[1]}"))
        return self._known

    def describe(self) -> dict:
        inspect = self._docker("image", "inspect", "--format", "{{.Id}}{{range .RepoDigests}} {{.}}{{end}}",
                               self.image_id, check=False)
        image_id, _, repo_digest = inspect.stdout.strip().partition(" ")
        repo_digest = repo_digest.split(" ")[0]
        return {"provider": self.kind, "image": self.image, "image_id": image_id or None,
                "image_digest": repo_digest or None,  # none for a locally built image (never pushed)
                "network": self.network, "container_user": f"{self.user[0]}:{self.user[1]}"}

    @property
    def where(self) -> str:
        return f"docker {self.image} (network {self.network})"

    # -------------------------------------------------------- lifecycle

    def start(self, options: dict, restore_from: Path | None = None, timeout_s: float = READY_TIMEOUT_S) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if restore_from is not None:
            copy_tree(restore_from, self.datadir)
        self.datadir.mkdir(exist_ok=True)
        if os.getuid() == 0:  # the server's account must own its datadir (a restored copy too)
            for path in [self.datadir, *self.datadir.rglob("*")]:
                os.lchown(path, *self.user)
        self.port = self.port or free_port()
        if self.run_dir is None:
            self.run_dir = private_run_dir(self.user)
        harness = {**harness_options(self.network, self.port), **mycnf.loopback_only(self.identity),
                   **mycnf.modern_innodb_defaults(self.identity)}
        self.cnf_path.write_text(mycnf.render(harness, options))
        self.cnf_path.chmod(0o644)  # read by the server's account
        self._docker("rm", "--force", self.container, check=False)
        self._docker(*run_args(self.image_id, self.container, self.port, self.datadir, self.cnf_path,
                               self.user, self.network, os.getpid(), self.run_dir))
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
        assert self.run_dir is not None, "connect before start"
        return pymysql.connect(unix_socket=str(self.run_dir / "mysqld.sock"), user="root", password="",
                               database=database, autocommit=True, connect_timeout=5, **kw)

    def bench_connection(self, cur, database: str):
        assert self.port is not None, "bench_connection before start"
        # host network: sysbench arrives from 127.0.0.1; published: from the bridge's gateway
        account_host = "127.0.0.1" if self.network == "host" else "%"
        return bench_account(cur, self.identity, account_host, "127.0.0.1", self.port, database, self.workdir)

    def stop(self, slow: bool = False) -> bool:
        if not self._started:
            return False
        clean = ask_shutdown(self.connect, slow, send_shutdown=False)  # `docker stop` shuts it down
        done = self._docker("stop", "--time", "600", self.container, timeout=660, check=False)
        code = self._docker("inspect", "--format", "{{.State.ExitCode}}", self.container, check=False).stdout.strip()
        self._docker("rm", "--force", self.container, check=False)
        self._started = False
        return clean and done.returncode == 0 and code == "0"

    def abandon(self) -> None:
        if self._started:
            self._docker("rm", "--force", self.container, check=False)
            self._started = False

    def death(self) -> tuple[str, str] | None:
        if not self._started:
            return None
        deadline = time.monotonic() + DEATH_GRACE_S  # the client may hear of a kill before docker does
        while True:
            state = self._docker("inspect", "--format", "{{.State.Running}} {{.State.ExitCode}} {{.State.OOMKilled}}",
                                 self.container, check=False).stdout.split()
            if len(state) == 3 and state[0] == "false":
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)
        how = "killed by the kernel's OOM killer" if state[2] == "true" else container_exit(int(state[1]))
        return how, self._logs()

    def cleanup(self, keep_workdir: bool = False) -> None:
        # by name, started or not: an interrupt may land while `docker run` is creating it
        self._docker("rm", "--force", self.container, check=False)
        self._started = False
        if self.run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
