"""Servers by name: the project's `servers.yaml` maps an id (`mysql-8.0.31`) to a
`--server` spec, so `--server mysql-8.0.31` means the same pinned build everywhere
(nightly matrix, PR checks, a laptop). An id is resolved to its spec at the command
line; everything after that (plans, results, the reproduce command) carries the spec.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from perfci.model.base import StrictModel
from perfci.model.scenario import load_yaml, validation_message
from perfci.providers.spec import GRAMMAR, SCHEMES, ServerSpec, parse_spec
from perfci.util.errors import BadInput
from perfci.util.paths import project_file

SERVERS_FILE = "servers.yaml"
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"


class ServerEntry(StrictModel):
    id: str = Field(pattern=ID_PATTERN, description="lower-case letters, digits, '.', '_', '-'")
    spec: str = Field(description=f"a --server spec: {GRAMMAR}")
    enabled: bool = Field(False, description="in the nightly matrix")
    note: str = ""
    flavor: Literal["mysql", "mariadb", "percona"] | None = Field(
        None, description="the release line's flavor: with `version`, orders releases (sweep --between, bisect)")
    version: str | None = Field(None, pattern=r"^\d+(\.\d+){1,3}$", description="the release, e.g. 8.0.31")

    @property
    def release(self) -> tuple[int, ...] | None:
        return tuple(int(x) for x in self.version.split(".")) if self.version else None

    @field_validator("spec")
    @classmethod
    def _valid_spec(cls, value: str) -> str:
        try:
            parse_spec(value)
        except BadInput as exc:
            raise ValueError(str(exc).removeprefix(f"--server {value!r}: ")) from None
        return value

    @property
    def parsed(self) -> ServerSpec:
        return parse_spec(self.spec)


class ServersFile(StrictModel):
    servers: list[ServerEntry]

    @model_validator(mode="after")
    def _unique_ids(self) -> ServersFile:
        seen: set[str] = set()
        for entry in self.servers:
            if entry.id in seen:
                raise ValueError(f"server id {entry.id!r} appears twice")
            seen.add(entry.id)
        return self

    def get(self, server_id: str) -> ServerEntry | None:
        return next((e for e in self.servers if e.id == server_id), None)

    def releases_between(self, first: str, last: str) -> list[ServerEntry]:
        """The releases of one flavor from `first` to `last` (ids, both included), oldest
        first, from the `flavor` and `version` servers.yaml gives them; one entry per
        version (the first listed)."""
        ends = []
        for server_id in (first, last):
            entry = self.get(server_id)
            if entry is None or entry.release is None or entry.flavor is None:
                ordered = ", ".join(e.id for e in self.servers if e.release is not None) or "none"
                raise BadInput(f"{SERVERS_FILE}: {server_id!r} has no `flavor` and `version` to order it by "
                               f"(ordered releases: {ordered})")
            ends.append(entry)
        if ends[0].flavor != ends[1].flavor:
            raise BadInput(f"{first} is {ends[0].flavor} and {last} is {ends[1].flavor}: releases between them "
                           "need one flavor")
        low, high = sorted(e.release or () for e in ends)
        found: dict[tuple[int, ...], ServerEntry] = {}
        for entry in self.servers:
            release = entry.release
            if entry.flavor == ends[0].flavor and release is not None and low <= release <= high:
                found.setdefault(release, entry)
        return [found[k] for k in sorted(found)]

    def releases_from(self, first: str, last: str) -> list[str]:
        """The ids of releases_between, from `first` to `last` (either may be the newer)."""
        ids = [e.id for e in self.releases_between(first, last)]
        return ids if ids[0] == first else ids[::-1]


def load_servers(path: Path | None = None) -> ServersFile:
    """The project's servers.yaml (none: an empty list)."""
    path = path or project_file(SERVERS_FILE)
    if path is None or not path.is_file():
        return ServersFile(servers=[])
    try:
        data = load_yaml(path.read_text(), str(path))
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return ServersFile.model_validate(data)
    except ValidationError as exc:
        raise BadInput(validation_message(str(path), exc, ServersFile)) from None


@dataclass(frozen=True)
class Resolved:
    spec: str                 # the spec to run
    server_id: str | None     # the servers.yaml id it came from


def resolve_server(text: str, servers: ServersFile | None = None, option: str = "--server") -> Resolved:
    """A --server value (or `option`'s: --good, --bad): a spec (has a scheme, or `local`)
    or a servers.yaml id. Bad specs and unknown ids are bad input, with what is allowed."""
    if ":" in text or text in SCHEMES:
        parse_spec(text)
        return Resolved(text, None)
    servers = servers if servers is not None else load_servers()
    entry = servers.get(text)
    if entry is None:
        known = ", ".join(e.id for e in servers.servers) or f"none, no {SERVERS_FILE} here or above"
        raise BadInput(f"{option} {text!r}: not a server id (known: {known}) and not a spec (allowed: {GRAMMAR})")
    return Resolved(entry.spec, entry.id)


def pinned_in_git_history(spec: str, path: Path | None = None) -> bool:
    """Whether the project's servers.yaml pinned `spec` in any commit of its git history:
    the reference server of a nightly whose id was bumped since is no longer in the
    file, but a reviewed commit put it there (needs the full history: fetch-depth 0)."""
    return spec in specs_in_git_history(path)


def specs_in_git_history(path: Path | None = None) -> set[str]:
    """Every spec the project's servers.yaml has pinned, in any commit (none without git)."""
    path = path or project_file(SERVERS_FILE)
    if path is None or not path.is_file():
        return set()
    try:
        log = subprocess.run(["git", "log", "-p", "--format=", "--", path.name], cwd=path.parent,
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if log.returncode != 0:
        return set()
    specs = set()
    for line in log.stdout.splitlines():
        key, _, value = line[1:].strip().partition(":")
        if line[:1] in "+- " and key.strip().lstrip("- ") == "spec":
            specs.add(value.strip().strip("'\""))
    return specs


def id_of_spec(spec: str) -> str | None:
    """The servers.yaml id whose spec is exactly `spec` (recorded in results: the same
    pinned build under its name), or None."""
    try:
        servers = load_servers()
    except BadInput:
        return None  # a broken servers.yaml is reported where it is used, not in every result
    return next((e.id for e in servers.servers if e.spec == spec), None)
