"""Server providers: where a server binary comes from and how it is run.

Spec grammar (shared by every command): `local` (mariadbd/mysqld on PATH) or
`local:/path/to/basedir` (or the binary itself). `docker:`, `tarball:`, `build:`
and `dsn:` are reserved for the providers that follow the local one.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import BadInput
from .local import LocalServer

FUTURE_SCHEMES = ("docker", "tarball", "build", "dsn")


def open_provider(spec: str, workdir: Path) -> LocalServer:
    scheme, _, rest = spec.partition(":")
    if scheme == "local":
        return LocalServer(Path(rest) if rest else None, workdir)
    if scheme in FUTURE_SCHEMES:
        raise BadInput(f"--server {spec!r}: the {scheme!r} provider is not available yet; use local or local:/path/to/basedir")
    raise BadInput(f"--server {spec!r}: unknown scheme {scheme!r}; allowed: local, local:/path/to/basedir")
