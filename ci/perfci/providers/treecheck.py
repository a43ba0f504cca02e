"""What an unpacked server tree held when perfci unpacked it from a verified archive, and
whether it still does.

A tree in the cache is reused by every later run; without a check, a changed binary (a
disk error, a stray write, a half-copied tree) would run under the pinned spec's name.
The manifest (`KEY.manifest.json` beside the tree) records each entry's type, mode and
link target, and each file's size and sha256 together with its inode and ctime: a file
whose inode, size and ctime are the ones recorded has not been written since (the
kernel sets ctime on every write, rename or chmod), so only files that moved are
hashed again — the check costs a walk of stat calls, once per process.

The manifest sits in the same cache as the tree: a job running as the same user can
rewrite both, so this is no defence against that user (the caches are kept apart per
trust level for that: SECURITY.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from perfci.util.files import write_atomic

_verified: set[Path] = set()  # trees checked by this process


def manifest_path(tree: Path) -> Path:
    return tree.with_name(tree.name + ".manifest.json")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entry(path: Path, info: os.stat_result, known: dict | None = None) -> dict:
    if stat.S_ISLNK(info.st_mode):
        return {"type": "link", "to": os.readlink(path)}
    if stat.S_ISDIR(info.st_mode):
        return {"type": "dir", "mode": stat.S_IMODE(info.st_mode)}
    if not stat.S_ISREG(info.st_mode):
        return {"type": "other"}
    unchanged = (known is not None and known.get("ino") == info.st_ino and known.get("size") == info.st_size
                 and known.get("ctime_ns") == info.st_ctime_ns)
    return {"type": "file", "mode": stat.S_IMODE(info.st_mode), "size": info.st_size, "ino": info.st_ino,
            "ctime_ns": info.st_ctime_ns, "sha256": known["sha256"] if unchanged and known else _sha256(path)}


def _walk(tree: Path) -> dict[str, os.stat_result]:
    found = {}
    for root, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            path = Path(root) / name
            found[str(path.relative_to(tree))] = path.lstat()
    return found


def take(tree: Path) -> dict[str, dict]:
    """The manifest of `tree` as it is now."""
    return {rel: _entry(tree / rel, info) for rel, info in sorted(_walk(tree).items())}


def record(tree: Path, manifest_for: Path | None = None) -> None:
    """Write the manifest of `tree` (made in a private directory) under the name of the
    tree it becomes (`manifest_for`)."""
    write_atomic(manifest_path(manifest_for or tree), json.dumps(take(tree), sort_keys=True))


def difference(tree: Path) -> str | None:
    """What differs between `tree` and its manifest (None: nothing)."""
    try:
        manifest = json.loads(manifest_path(tree).read_text())
    except (OSError, ValueError):
        return "no readable manifest (unpacked by an older perfci, or removed)"
    now = _walk(tree)
    for rel in sorted(set(manifest) | set(now)):
        if rel not in now:
            return f"{rel} is missing"
        if rel not in manifest:
            return f"{rel} was added"
        was = manifest[rel]
        current = _entry(tree / rel, now[rel], was if was.get("type") == "file" else None)
        keys = ("type", "mode", "size", "sha256", "to")
        if any(current.get(k) != was.get(k) for k in keys):
            return f"{rel} changed"
    return None


def verified_once(tree: Path) -> str | None:
    """difference(tree), checked once per process (None also when checked before)."""
    if tree in _verified:
        return None
    found = difference(tree)
    if found is None:
        _verified.add(tree)
    return found
