"""Server providers: where a server comes from and how it is run. The spec grammar
is in `spec.py`; every provider implements the contract in `base.py` (start, stop,
connect, identity, describe, known_options, supports_snapshots, cleanup, ...), so the
runner does not care where a server comes from."""

from __future__ import annotations

from pathlib import Path

from perfci.providers.basedirs import build_basedir, build_commit, build_record, tarball_basedir
from perfci.providers.docker import LOCAL_IMAGE_PREFIX, DockerServer
from perfci.providers.dsn import DsnServer
from perfci.providers.local import LocalServer, sandboxed_servers
from perfci.providers.maven import maven_basedir
from perfci.providers.provider import ServerProvider
from perfci.providers.spec import GRAMMAR, ServerSpec, parse_spec
from perfci.util.errors import BadInput

__all__ = ["GRAMMAR", "ServerProvider", "ServerSpec", "fetched_basedir", "open_provider", "parse_spec"]


def fetched_basedir(spec: ServerSpec) -> Path:
    """The unpacked basedir of a tarball:, build: or maven: spec (fetched or built once)."""
    return {"tarball": tarball_basedir, "build": build_basedir, "maven": maven_basedir}[spec.scheme](spec)


def open_provider(spec_text: str, workdir: Path) -> ServerProvider:
    """The provider a spec names; mypy checks each against the contract (base.py)."""
    spec = parse_spec(spec_text)
    if spec.scheme == "local":
        return LocalServer(Path(spec.path) if spec.path else None, workdir, sandboxed_servers())
    if spec.scheme in ("tarball", "build", "maven"):
        basedir = fetched_basedir(spec)
        server = LocalServer(basedir, workdir, sandboxed_servers())
        server.kind = spec.scheme
        if spec.scheme == "build":
            server.commit, server.build = build_commit(basedir), build_record(basedir)
        return server
    if spec.scheme == "docker":
        if not spec.digest and not spec.image.startswith(LOCAL_IMAGE_PREFIX):
            raise BadInput(f"--server {spec.text!r}: an image from a registry needs its digest "
                           "(IMAGE:TAG@sha256:...): a tag can move to other bytes; pin it (docker buildx "
                           "imagetools inspect IMAGE:TAG) — images built here (perfci-local/) are pinned to "
                           "their id at start")
        return DockerServer(spec.image, workdir, network=spec.network)
    return DsnServer(spec, workdir)
