"""Dataset snapshot cache: prepare a dataset once, keep the datadir, restore it later.

A snapshot is keyed by (flavor, major.minor version, the dataset spec and the data
steps that built it, the options that change on-disk format). It is taken after a
slow, clean shutdown (purge done, change buffer merged), copied with reflinks where
the filesystem supports them, and described by a manifest that records the sha256 of
every data file and its own sha256; both are checked on every restore. A snapshot
from an unclean shutdown, with a bad manifest or a changed data file, or from
another server version is refused (and replaced by a fresh prepare). The key
includes a hash of the code that writes the data, so a changed loader never
restores an old dataset. The cache is evicted least-recently-used by total size.

The checksums catch corruption and a snapshot planted or edited by anything that
cannot also recompute them; they are not a signature. What keeps untrusted code from
writing this cache at all is the trust separation in SECURITY.md (PR jobs use a cache
of their own under $RUNNER_TEMP).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from perfci.model.flavor import ServerIdentity, Version
from perfci.model.result import ConfigValue
from perfci.model.scenario import ApplyLayoutStep, DeleteRandomStep, PrepareStep, ResolvedScenario
from perfci.providers.capabilities import parse_size
from perfci.util.files import write_json_atomic

MANIFEST = "manifest.json"
SCHEMA = "perfci.snapshot/1"
DATA_STEPS = (PrepareStep, ApplyLayoutStep, DeleteRandomStep)
# Options that change what is on disk for the same data: part of the key.
FORMAT_OPTIONS = ("innodb_page_size", "innodb_compression_level", "innodb_compression_algorithm",
                  "innodb_checksum_algorithm", "innodb_default_row_format", "innodb_file_per_table",
                  "lower_case_table_names", "character_set_server", "collation_server")
DEFAULT_MAX_GB = 50.0
# Bump when what the data steps write changes (e.g. the perfci loader's payload):
# old snapshots then no longer match any key and age out of the cache.
# 2: root is root@localhost only (MariaDB's root@127.0.0.1 and the images' root@'%' gone)
DATA_FORMAT = 2
# The modules whose code decides what a data step writes: their hash is in the key.
DATA_CODE = ("loader.py", "steps.py", "sysbench.py", "snapshots.py", "snapshot_use.py")


@functools.cache
def data_code_hash() -> str:
    h = hashlib.sha256()
    for name in DATA_CODE:
        h.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:16]


def default_root() -> Path:
    if os.environ.get("PERFCI_SNAPSHOT_DIR"):
        return Path(os.environ["PERFCI_SNAPSHOT_DIR"])
    base = Path(os.environ.get("PERFCI_CACHE") or Path.home() / ".cache" / "perfci")
    return base / "snapshots"


def data_prefix(resolved: ResolvedScenario) -> list:
    """The leading steps that only build the dataset (what a snapshot replaces)."""
    prefix = []
    for step in resolved.steps:
        if not isinstance(step, DATA_STEPS):
            break
        prefix.append(step)
    return prefix


def snapshot_spec(resolved: ResolvedScenario, identity: ServerIdentity, options: dict, sysbench: str,
                  provider: str = "local") -> dict:
    """What the snapshot's datadir depends on. `provider` (its kind): a datadir holds the
    accounts and the file ownership its provider set up (a container's image creates
    its own root account, a local server ours), so one never restores another's."""
    v = identity.version
    return {
        "data_format": DATA_FORMAT,
        "provider": provider,
        "data_code": data_code_hash(),
        "sysbench": sysbench,  # prepare's rows depend on its generator
        "flavor": identity.flavor,
        "major_version": f"{v.major}.{v.minor}",
        "dataset": resolved.dataset.model_dump(mode="json"),
        "steps": [s.model_dump(mode="json") for s in data_prefix(resolved)],
        "format_options": {k: str(options[k]) for k in FORMAT_OPTIONS if k in options},
    }


SNAPSHOT_REDO_BYTES = 16 << 20


def shrink_redo(conn, identity: ServerIdentity) -> bool:
    """Best effort before the snapshot's shutdown on MySQL 8.0.30+, which resizes its redo
    log online: a small redo log makes a small snapshot (after a slow shutdown its
    content is not needed); the restored server resizes it to its configured size at
    start. MariaDB is shrunk by a start instead (`small_redo_restart`); servers that
    can do neither keep theirs."""
    if identity.flavor == "mariadb":
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL innodb_redo_log_capacity = 8388608")
        return True
    except Exception:  # noqa: BLE001 - any server error just means: keep the log as it is
        return False


def small_redo_restart(identity: ServerIdentity, options: dict[str, ConfigValue]) -> dict[str, ConfigValue] | None:
    """The options of one extra start (and clean stop) after MariaDB's slow shutdown that
    leaves the snapshot a small redo log: MariaDB resizes ib_logfile0 at start, the path
    every restore takes anyway. Not `SET GLOBAL innodb_log_file_size` (online resize)
    before the shutdown: on 10.11.19 that once left a log whose last checkpoint record
    was missing, and the restart refused the datadir ("Missing FILE_CHECKPOINT").
    The buffer pool dump of the slow shutdown is kept (neither loaded nor rewritten).
    None where there is nothing to do: MySQL, and MariaDB before 10.11 (a log file
    written in full at every resize; they keep theirs, as before)."""
    if identity.flavor != "mariadb" or identity.version < Version.parse("10.11.0"):
        return None
    configured = parse_size(options.get("innodb_log_file_size", 96 << 20))
    small = max(SNAPSHOT_REDO_BYTES, parse_size(options.get("innodb_log_buffer_size", 0)))
    if configured <= small:
        return None
    return {**options, "innodb_log_file_size": small, "innodb_buffer_pool_load_at_startup": "OFF",
            "innodb_buffer_pool_dump_at_shutdown": "OFF"}


class SnapshotServer(TypedDict):
    flavor: str
    full_version: str


class SnapshotManifest(TypedDict):
    """manifest.json of a cache entry: what was prepared, on which server, and the sha256
    of every data file (manifest_sha256 covers the rest; a restore checks both)."""

    schema: str
    key: str
    spec: dict[str, Any]
    server: SnapshotServer
    clean_shutdown: bool
    created_at: str
    last_used_at: str
    bytes: int
    tables: dict[str, dict[str, Any]]  # TableState fields by table
    steps: list[dict[str, Any]]  # the Step records of the data steps it replaces
    files: dict[str, str]
    manifest_sha256: NotRequired[str]


def spec_key(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]


def _manifest_digest(manifest: SnapshotManifest) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def file_digests(root: Path) -> dict[str, str]:
    """sha256 of every file under `root`, by relative path."""
    out = {}
    for f in sorted(root.rglob("*")):
        if f.is_file() and not f.is_symlink():
            h = hashlib.sha256()
            with f.open("rb") as data:
                for block in iter(lambda: data.read(1 << 20), b""):
                    h.update(block)
            out[str(f.relative_to(root))] = h.hexdigest()
        elif f.is_symlink():
            out[str(f.relative_to(root))] = "symlink"  # never in a datadir we made: refused below
    return out


def first_difference(recorded: dict[str, str], found: dict[str, str]) -> str | None:
    for name in sorted(set(recorded) | set(found)):
        if name not in found:
            return f"{name} missing"
        if name not in recorded:
            return f"{name} not in the manifest"
        if recorded[name] != found[name] or found[name] == "symlink":
            return f"{name} changed"
    return None


@dataclass
class Lookup:
    datadir: Path | None      # the snapshot's datadir to restore, or None: prepare
    manifest: SnapshotManifest | None
    note: str                 # what happened, for the result


class SnapshotCache:
    def __init__(self, root: Path | None = None, max_bytes: int | None = None):
        self.root = Path(root or default_root())
        gb = float(os.environ.get("PERFCI_SNAPSHOT_MAX_GB", DEFAULT_MAX_GB))
        self.max_bytes = max_bytes if max_bytes is not None else int(gb * 2**30)

    def lookup(self, key: str, full_version: str) -> Lookup:
        entry = self.root / key
        manifest_path = entry / MANIFEST
        if not entry.is_dir():
            return Lookup(None, None, "no snapshot yet: prepared and saved")
        try:
            manifest: SnapshotManifest = json.loads(manifest_path.read_text())
        except (OSError, json.JSONDecodeError):
            self._discard(entry)
            return Lookup(None, None, "refused a snapshot without a readable manifest (discarded): prepared")
        if manifest.get("schema") != SCHEMA or manifest.get("manifest_sha256") != _manifest_digest(manifest):
            self._discard(entry)
            return Lookup(None, None, "refused a snapshot whose manifest checksum does not match (discarded): prepared")
        if not manifest.get("clean_shutdown"):
            self._discard(entry)
            return Lookup(None, None, "refused a snapshot taken without a clean shutdown (discarded): prepared")
        recorded = manifest.get("files")
        difference = first_difference(recorded, file_digests(entry / "data")) if recorded else "no file digests"
        if difference:
            self._discard(entry)
            return Lookup(None, None, f"refused a snapshot whose data files do not match its manifest "
                                      f"({difference}; discarded): prepared")
        if manifest["server"]["full_version"] != full_version:
            return Lookup(None, manifest, f"refused a snapshot of server {manifest['server']['full_version']} "
                                          f"(this is {full_version}): prepared and replaced")
        manifest["last_used_at"] = _now()
        manifest["manifest_sha256"] = _manifest_digest(manifest)
        write_json_atomic(manifest_path, manifest)
        return Lookup(entry / "data", manifest, f"restored snapshot {key}")

    def save(self, key: str, spec: dict, datadir: Path, server: SnapshotServer, clean: bool,
             tables: dict[str, dict[str, Any]], steps: list[dict[str, Any]]) -> Path | None:
        """Copy `datadir` into the cache (only after a clean shutdown); returns the entry."""
        if not clean:
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".{key}.{uuid.uuid4().hex[:6]}.partial"
        staging.mkdir()
        done = subprocess.run(["cp", "-a", "--reflink=auto", str(datadir), str(staging / "data")],
                              capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            return None
        manifest = SnapshotManifest(schema=SCHEMA, key=key, spec=spec, server=server, clean_shutdown=clean,
                                    created_at=_now(), last_used_at=_now(), bytes=dir_bytes(staging / "data"),
                                    tables=tables, steps=steps, files=file_digests(staging / "data"))
        manifest["manifest_sha256"] = _manifest_digest(manifest)
        write_json_atomic(staging / MANIFEST, manifest)
        entry = self.root / key
        self._discard(entry)  # a refused older snapshot (other server version) is replaced
        staging.replace(entry)
        self.evict(keep=entry)
        return entry

    def entries(self) -> list[tuple[Path, dict]]:
        out = []
        for entry in self.root.glob("*/" + MANIFEST) if self.root.is_dir() else []:
            try:
                out.append((entry.parent, json.loads(entry.read_text())))
            except (OSError, json.JSONDecodeError):
                out.append((entry.parent, {}))
        return out

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove least recently used snapshots until the total fits max_bytes."""
        entries = sorted(self.entries(), key=lambda e: e[1].get("last_used_at", ""))
        total = sum(m.get("bytes", 0) for _, m in entries)
        removed = []
        for path, manifest in entries:
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            self._discard(path)
            total -= manifest.get("bytes", 0)
            removed.append(path)
        return removed

    @staticmethod
    def _discard(entry: Path) -> None:
        if entry.exists():
            trash = entry.with_name(f".{entry.name}.{uuid.uuid4().hex[:6]}.trash")
            entry.replace(trash)  # atomic: a reader never sees half a snapshot
            shutil.rmtree(trash, ignore_errors=True)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
