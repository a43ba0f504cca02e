"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

from perfci.util.errors import InfraFailure

# a device that cannot take the write: the host's problem, not perfci's (exit 3, named)
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def write_failure(path: Path, exc: OSError, kept: str) -> InfraFailure | OSError:
    """A failed write in one line naming the file, when the device is full or read-only;
    `kept` says what is left of it (e.g. "the file is unchanged")."""
    if exc.errno in NO_SPACE:
        return InfraFailure(f"cannot write {path}: {exc.strerror}; {kept}")
    return exc


def write_atomic(path: Path, text: str) -> None:
    """Write to a temp file in the same directory, fsync, then rename over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise write_failure(path, exc, "nothing was half-written") from exc
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_json_atomic(path: Path, data) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
