"""Offline Docker images of the servers this host can run (scripts/build-local-images).

No registry is reachable from every runner, so `perfci-local/...` images are built
from the same binaries `--server ID` runs natively: a `maven:`/`tarball:` basedir
(under /opt/server) or the distribution's packaged server, the shared libraries
those binaries load (found with ldd), a static busybox for the entrypoint, and an
entrypoint that does what the docker provider relies on in the official images:
initialise an empty datadir with a password-less root@'%' (as with
MYSQL_ALLOW_EMPTY_PASSWORD), read /etc/mysql/conf.d, honour `docker run --user`, and
never run the server as root. The root filesystem goes through `docker import`; the
image is labelled with its recipe hash, so an unchanged image is not rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from perfci.model.flavor import identify_version_output
from perfci.providers import fetched_basedir, parse_spec
from perfci.providers.docker import docker_cli
from perfci.providers.local import find_binary
from perfci.providers.servers import resolve_server
from perfci.util.errors import BadInput, InfraFailure

BUSYBOX = Path("/bin/busybox")  # Debian busybox-static: a shell and coreutils in one file
MYSQL_UID = 999                  # what the official mysql and mariadb images use
SERVER_ROOT = "/opt/server"
SKIPPED_SUFFIXES = (".a", ".jar")  # static client libraries and Java connectors: not needed to serve
IMPORT_TIMEOUT_S = 900


@dataclass(frozen=True)
class LocalImage:
    image: str       # perfci-local/FLAVOR:VERSION
    server_id: str   # the servers.yaml entry whose binaries it holds
    version: str     # the version prefix the binary must report


LOCAL_IMAGES = (
    LocalImage("perfci-local/mysql:8.0.31", "mysql-8.0.31", "8.0.31"),
    LocalImage("perfci-local/mariadb:11.4.5", "mariadb-11.4.5", "11.4.5"),
    LocalImage("perfci-local/mariadb:10.11", "mariadb-10.11", "10.11."),
)

ENTRYPOINT = r"""#!/bin/sh
# perfci-local entrypoint: what the official mysql/mariadb entrypoints do that perfci
# relies on. Initialises an empty datadir (a root without a password, as with
# MYSQL_ALLOW_EMPTY_PASSWORD: root@'%', or root@localhost alone when MYSQL_ROOT_HOST /
# MARIADB_ROOT_HOST is localhost), reads /etc/mysql/conf.d (via /etc/mysql/my.cnf), runs
# as whatever `docker run --user` says, and, started as root, has the server step down
# to mysql itself (mysqld --user) after handing it the datadir.
set -eu
DATADIR=/var/lib/mysql
SERVER=$(command -v mariadbd || command -v mysqld)
if [ "$#" -eq 0 ]; then set -- mysqld; fi
case "$1" in -*) set -- mysqld "$@" ;; esac
case "$1" in mysqld|mariadbd) shift ;; *) exec "$@" ;; esac
for arg in "$@"; do
  case "$arg" in --help|--version|-V|--verbose) exec "$SERVER" "$@" ;; esac
done
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$DATADIR"
  chown -R mysql:mysql "$DATADIR" /var/run/mysqld
  set -- --user=mysql "$@"
fi
if [ ! -d "$DATADIR/mysql" ]; then
  if [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-}" ]; then
    echo >&2 "error: database is uninitialized and MYSQL_ALLOW_EMPTY_PASSWORD / MARIADB_ALLOW_EMPTY_ROOT_PASSWORD is not set"
    exit 1
  fi
  echo "perfci-local: initialising $DATADIR"
  if [ "${SERVER##*/}" = mariadbd ]; then
    basedir=""
    [ -d /opt/server ] && basedir="--basedir=/opt/server"
    sh "$(command -v mariadb-install-db)" $basedir --auth-root-authentication-method=normal --skip-test-db \
      --datadir="$DATADIR" "$@"
    # "normal" root is also root@127.0.0.1, ::1 and HOSTNAME (old versions: anonymous users)
    table=user
    ls "$DATADIR"/mysql/global_priv.* >/dev/null 2>&1 && table=global_priv
    echo "DELETE FROM mysql.$table WHERE (User = 'root' AND Host <> 'localhost') OR User = '';" \
      | "$SERVER" --bootstrap "$@"
  else
    "$SERVER" --initialize-insecure "$@"
  fi
  if [ "${MYSQL_ROOT_HOST:-${MARIADB_ROOT_HOST:-%}}" != localhost ]; then
    printf "CREATE USER IF NOT EXISTS 'root'@'%%';\nGRANT ALL ON *.* TO 'root'@'%%' WITH GRANT OPTION;\n" \
      > /tmp/perfci-root.sql
    set -- "$@" --init-file=/tmp/perfci-root.sql
  fi
  echo "perfci-local: initialised; starting the server"
fi
exec "$SERVER" "$@"
"""


def my_cnf(basedir_image: bool) -> str:
    lines = ["[mysqld]", "datadir = /var/lib/mysql", "socket = /var/run/mysqld/mysqld.sock"]
    if basedir_image:
        lines.append(f"basedir = {SERVER_ROOT}")
    return "\n".join([*lines, "", "!includedir /etc/mysql/conf.d/", ""])


def image_config(recipe: str, source: str) -> list[str]:
    """`docker import --change` lines: the image metadata an official image has."""
    path = f"{SERVER_ROOT}/bin:{SERVER_ROOT}/scripts:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return [f"ENV PATH={path}", 'ENTRYPOINT ["docker-entrypoint.sh"]', 'CMD ["mysqld"]',
            "EXPOSE 3306", "VOLUME /var/lib/mysql",
            f"LABEL perfci.recipe={recipe} perfci.source={json.dumps(source)}"]


def recipe_hash(local: LocalImage, spec: str, server_bytes_id: str) -> str:
    """What the image is made of: the server (spec and binary), this builder, busybox."""
    h = hashlib.sha256()
    for part in (local.image, spec, server_bytes_id):
        h.update(part.encode())
        h.update(b"\0")
    h.update(Path(__file__).read_bytes())  # this builder, entrypoint included
    h.update(BUSYBOX.read_bytes() if BUSYBOX.exists() else b"")
    return h.hexdigest()[:16]


# ----------------------------------------------------------- what goes in

_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def shared_libraries(ldd_output: str) -> list[str]:
    """Absolute library paths (the loader included) in `ldd` output."""
    return [m.group(1) for line in ldd_output.splitlines() if (m := _LDD_LINE.search(line.strip()))]


def is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def host_package_files(binary: Path) -> list[Path]:
    """A packaged server's files: those of the packages owning the server, its
    install-db script and my_print_defaults, plus the plugin directory (docs left out)."""
    owners: set[str] = set()
    for tool in (str(binary), "mariadb-install-db", "my_print_defaults"):
        path = tool if tool.startswith("/") else shutil.which(tool) or ""
        if not path:
            continue
        done = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True)
        if done.returncode != 0:
            raise BadInput(f"{path}: not from a Debian package; build the image from a tarball or maven: server")
        owners.update(line.split(":", 1)[0] for line in done.stdout.splitlines())
    listed = subprocess.run(["dpkg", "-L", *sorted(owners)], capture_output=True, text=True, check=True).stdout
    files = [Path(p) for p in listed.splitlines()
             if not p.startswith(("/usr/share/doc", "/usr/share/man", "/usr/share/lintian"))]
    plugin_dir = Path("/usr/lib/mysql/plugin")
    if plugin_dir.is_dir():
        files += sorted(plugin_dir.iterdir())
    return [f for f in files if f.is_file() or f.is_symlink()]


class RootFs:
    """A root filesystem being assembled in a directory, owned by root except `owned`."""

    def __init__(self, root: Path):
        self.root = root
        self.mysql_owned: list[str] = []

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def copy_file(self, src: Path, inside: str) -> None:
        dest = self.path(inside)
        if dest.exists() or dest.is_symlink():
            return
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink() and not os.readlink(src).startswith("/"):
            os.symlink(os.readlink(src), dest)   # relative links (libfoo.so -> libfoo.so.1) stay links
        else:
            shutil.copy2(src, dest)              # absolute ones become the file they name

    def write(self, inside: str, text: str, mode: int = 0o644) -> None:
        dest = self.path(inside)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        dest.chmod(mode)

    def directory(self, inside: str, mode: int = 0o755, mysql: bool = False) -> None:
        dest = self.path(inside)
        dest.mkdir(parents=True, exist_ok=True)
        dest.chmod(mode)
        if mysql:
            self.mysql_owned.append(inside.lstrip("/"))

    def tar(self, out: Path) -> None:
        def owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
            name = info.name.lstrip("./")
            mine = any(name == d or name.startswith(d + "/") for d in self.mysql_owned)
            info.uid = info.gid = MYSQL_UID if mine else 0
            info.uname = info.gname = "mysql" if mine else "root"
            info.mode &= ~0o6000  # no setuid/setgid bits in a server image
            return info
        with tarfile.open(out, "w") as tar:
            for child in sorted(self.root.iterdir()):
                tar.add(child, arcname=child.name, filter=owner)


def add_server_tree(fs: RootFs, basedir: Path) -> list[Path]:
    """Copy a basedir to /opt/server; the ELF files in it (for ldd)."""
    elves = []
    for src in sorted(basedir.rglob("*")):
        if src.is_dir() and not src.is_symlink():
            continue
        if src.name.endswith(SKIPPED_SUFFIXES):
            continue
        inside = f"{SERVER_ROOT}/{src.relative_to(basedir)}"
        fs.copy_file(src, inside)
        if not src.is_symlink() and is_elf(src):
            elves.append(src)
    return elves


def add_libraries(fs: RootFs, elves: list[Path], basedir: Path | None) -> None:
    """The libraries `ldd` resolves for each ELF file, at the same paths (inside the
    basedir: already there, at /opt/server)."""
    wanted: set[str] = set()
    for elf in elves:
        done = subprocess.run(["ldd", str(elf)], capture_output=True, text=True)
        if "not found" in done.stdout:
            missing = [line.split()[0] for line in done.stdout.splitlines() if "not found" in line]
            raise InfraFailure(f"{elf}: needs libraries this host lacks: {', '.join(missing)}")
        wanted.update(shared_libraries(done.stdout))
    for lib in sorted(wanted):
        if basedir is not None and Path(lib).resolve().is_relative_to(basedir.resolve()):
            continue
        fs.copy_file(Path(os.path.realpath(lib)), lib)


def add_userland(fs: RootFs) -> None:
    if not BUSYBOX.exists():
        raise BadInput(f"{BUSYBOX} not found: the images' shell is Debian's busybox-static "
                       "(apt-get install busybox-static; scripts/install-deps does)")
    fs.copy_file(BUSYBOX, "/bin/busybox")
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        link = fs.path(f"/bin/{applet}")
        if not link.exists() and applet != "busybox":
            link.symlink_to("busybox")
    fs.write("/etc/passwd", f"root:x:0:0:root:/root:/bin/sh\nmysql:x:{MYSQL_UID}:{MYSQL_UID}:MySQL:/var/lib/mysql:/bin/false\n")
    fs.write("/etc/group", f"root:x:0:\nmysql:x:{MYSQL_UID}:\n")
    fs.write("/usr/local/bin/docker-entrypoint.sh", ENTRYPOINT, mode=0o755)
    fs.directory("/tmp", 0o1777)
    fs.directory("/root", 0o700)
    fs.directory("/etc/mysql/conf.d")
    fs.directory("/var/lib/mysql", 0o750, mysql=True)
    fs.directory("/var/run/mysqld", 0o755, mysql=True)


# ----------------------------------------------------------- building

def docker(*args: str, stdin: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    with (stdin.open("rb") if stdin else open(os.devnull, "rb")) as feed:
        try:
            return subprocess.run([docker_cli(), *args], stdin=feed, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise InfraFailure(f"docker {args[0]}: no answer within {timeout:.0f}s") from None


def existing(image: str) -> tuple[str, str] | None:
    """(image id, recipe label) of the image with this tag, if the host has one."""
    done = docker("image", "inspect", "--format", '{{.Id}} {{index .Config.Labels "perfci.recipe"}}', image)
    if done.returncode != 0:
        return None
    image_id, _, recipe = done.stdout.decode().strip().partition(" ")
    return image_id, recipe


def build(local: LocalImage, force: bool = False) -> str:
    """Build (or keep) one image; a line saying which."""
    if docker("version", "--format", "{{.Server.Version}}", timeout=30).returncode != 0:
        raise InfraFailure("docker: no Docker engine answers; scripts/install-deps starts one")
    resolved = resolve_server(local.server_id)
    spec = resolved.spec
    parsed = parse_spec(spec)
    basedir = fetched_basedir(parsed) if parsed.scheme in ("tarball", "maven", "build") else None
    binary = find_binary(basedir if basedir else (Path(parsed.path) if parsed.path else None))
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    identity = identify_version_output(out)
    if not str(identity.version).startswith(local.version):
        raise BadInput(f"{local.image}: {local.server_id} is {identity.full_version} here, not {local.version}")
    stat = binary.stat()
    recipe = recipe_hash(local, spec, f"{identity.full_version} {stat.st_size} {stat.st_mtime_ns}")
    before = existing(local.image)
    if not force and before is not None and before[1] == recipe:
        return f"{local.image}: up to date ({identity.full_version}, recipe {recipe})"
    with tempfile.TemporaryDirectory(prefix="perfci-image-") as tmp:
        fs = RootFs(Path(tmp) / "rootfs")
        fs.root.mkdir()
        if basedir is not None:
            elves = add_server_tree(fs, basedir)
        else:
            elves = []
            for src in host_package_files(binary):
                fs.copy_file(src, str(src))
                if not src.is_symlink() and is_elf(src):
                    elves.append(src)
        add_userland(fs)
        add_libraries(fs, [*elves, BUSYBOX], basedir)  # a dynamic busybox (Debian's `busybox`) too
        fs.write("/etc/mysql/my.cnf", my_cnf(basedir is not None))
        archive = Path(tmp) / "rootfs.tar"
        fs.tar(archive)
        changes = [arg for line in image_config(recipe, spec) for arg in ("--change", line)]
        done = docker("import", *changes, "-", local.image, stdin=archive, timeout=IMPORT_TIMEOUT_S)
        if done.returncode != 0:
            raise InfraFailure(f"docker import {local.image} failed: {done.stderr.decode().strip()[-300:]}")
    if before is not None and before[0] != done.stdout.decode().strip():
        docker("image", "rm", before[0])  # the replaced image, untagged now (kept if a container uses it)
    return f"{local.image}: built from {local.server_id} ({identity.full_version}, recipe {recipe})"


def select(names: tuple[str, ...]) -> list[LocalImage]:
    if not names:
        return list(LOCAL_IMAGES)
    known = {i.image: i for i in LOCAL_IMAGES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(f"build-images: unknown image {', '.join(map(repr, unknown))}; "
                       f"known: {', '.join(known)}")
    return [known[n] for n in names]

