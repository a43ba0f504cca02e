"""The provider contract: what the runner needs from a server, wherever it comes
from (a local binary, a tarball or source build, a Docker image, an existing server).

Every provider (`local`, `docker`, `dsn`; `tarball:`/`build:` run as `local`)
implements it; the runner's unit tests use a fake that starts nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import JsonValue

if TYPE_CHECKING:
    import pymysql.connections
    import pymysql.cursors

    from perfci.model.connection import Connection
    from perfci.model.flavor import ServerIdentity
    from perfci.model.result import ConfigValue


@runtime_checkable
class ServerProvider(Protocol):
    kind: str                  # "local", "tarball", "build", "docker", "dsn": recorded as server.provider
    supports_snapshots: bool   # the datadir is ours to copy and restore
    workdir: Path              # this run's scratch directory (datadir, my.cnf, logs)

    @property
    def identity(self) -> ServerIdentity:
        """Flavor and version of the binary/image (known before start)."""

    @property
    def where(self) -> str:
        """A short human description: the binary path, the image, user@host:port."""

    @property
    def pid(self) -> int | None:
        """The server's process id on this host (for CPU accounting), if it has one."""

    @property
    def datadir(self) -> Path:
        """The datadir a snapshot copies (only used where supports_snapshots)."""

    def known_options(self) -> frozenset[str] | set[str] | None:
        """Normalized option names the server accepts (None: do not check)."""

    def describe(self) -> dict[str, JsonValue]:
        """Provider fields recorded in result.server (binary, image, digest, dsn, ...)."""

    def start(self, options: dict[str, ConfigValue], restore_from: Path | None = None) -> None:
        """Start with these my.cnf options, on a fresh datadir or a copy of `restore_from`."""

    def stop(self, slow: bool = False) -> bool:
        """Shut down (slow: purge and merge first); True if the shutdown was clean."""

    def abandon(self) -> None:
        """Stop at once, without a clean shutdown: an interrupted run throws its datadir
        away, and a CI runner's SIGKILL follows its cancel signal within 10 s."""

    def death(self) -> tuple[str, str] | None:
        """If the server is gone although nobody stopped it: (how it ended, e.g. "killed by
        signal 9", the tail of its error log); None while it runs or when unknown."""

    def connect(self, database: str | None = None) -> pymysql.connections.Connection[pymysql.cursors.Cursor]:
        """An administrative connection (autocommit)."""

    def bench_connection(self, cur: pymysql.cursors.Cursor, database: str) -> Connection:
        """Create (over `cur`) and return the account sysbench connects with."""

    def cleanup(self, keep_workdir: bool = False) -> None:
        """Remove what the run created (always called, also after a failure)."""
