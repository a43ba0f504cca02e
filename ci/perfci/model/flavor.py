"""Which server this is: flavor (mysql / percona / mariadb) and version.

Detected from the binary's `--version` line before start, and confirmed from the
running server (`VERSION()`, `@@version_comment`), which is the authority.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NotRequired, TypedDict

FLAVORS = ("mysql", "percona", "mariadb")
# each flavor's upstream repository: what scripts/build-server clones (its `case` names the
# same, held equal by tests/providers/test_build_provenance.py) and where the dashboard links commits
UPSTREAMS = {"mysql": "https://github.com/mysql/mysql-server", "percona": "https://github.com/percona/percona-server",
             "mariadb": "https://github.com/MariaDB/server"}

_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, text: str) -> Version:
        m = _VERSION_RE.search(text)
        if not m:
            raise ValueError(f"no version number in {text!r}")
        return cls(*(int(g) for g in m.groups()))


@dataclass(frozen=True)
class ServerIdentity:
    flavor: str
    version: Version
    full_version: str  # e.g. "10.11.19-MariaDB-0+deb12u1" or "8.0.36-28"
    comment: str = ""

    @property
    def label(self) -> str:
        return f"{self.flavor}-{self.version}"

    def info(self, running: bool) -> ServerInfo:
        """The fields a result's server records; the version comment only from a running server."""
        info = ServerInfo(flavor=self.flavor, version=str(self.version), full_version=self.full_version)
        if running:
            info["version_comment"] = self.comment
        return info


class ServerInfo(TypedDict):
    """Who the server is, as result.server records it."""

    flavor: str
    version: str
    full_version: str
    version_comment: NotRequired[str]


def _flavor_of(text: str) -> str:
    low = text.lower()
    if "mariadb" in low:
        return "mariadb"
    if "percona" in low:
        return "percona"
    return "mysql"


def identify(version: str, comment: str = "") -> ServerIdentity:
    """From `SELECT VERSION(), @@version_comment` (or any text holding both)."""
    return ServerIdentity(
        flavor=_flavor_of(f"{version} {comment}"),
        version=Version.parse(version),
        full_version=version.strip(),
        comment=comment.strip(),
    )


def identify_version_output(line: str) -> ServerIdentity:
    """From `mysqld --version` / `mariadbd --version`, e.g.
    `mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release 28, ...)`."""
    m = re.search(r"Ver\s+(\S+)\s*(.*)", line)
    if not m:
        raise ValueError(f"unrecognised --version output: {line.strip()!r}")
    version, rest = m.group(1), m.group(2)
    return identify(version, rest)
