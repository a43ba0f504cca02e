"""Append-only JSON-lines files (the history's case files and its annotations).

A line that does not parse (an append torn by a crash or a full disk, a hand edit gone
wrong) costs no night: readers skip it with a one-line warning naming file and line,
and the next append first moves every such line aside to `FILE.rejected` (kept for a
person to look at) so tonight's line never glues onto a torn one. A line written by a
newer perfci is not damage: it stays an error (NewerFormat), never moved aside.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from perfci.util.errors import BadInput, NewerFormat
from perfci.util.files import write_atomic, write_failure

T = TypeVar("T")
Parse = Callable[[str, str], T]  # (line, "FILE:LINE") -> item; BadInput when the line is damaged
REJECTED = ".rejected"


@dataclass(frozen=True)
class BadLine:
    number: int
    text: str
    reason: str


def _lines(path: Path) -> list[str]:
    try:
        return Path(path).read_text(errors="replace").split("\n")
    except FileNotFoundError:
        return []


def read(path: Path, parse: Parse[T]) -> tuple[list[T], list[BadLine]]:
    """The file's items in order, and its damaged lines (each warned about on stderr)."""
    items, bad = _parse_all(path, parse)
    for b in bad:
        print(f"perfci: warning: {path}:{b.number}: damaged line skipped ({b.reason}); the next append moves it "
              f"to {Path(path).name}{REJECTED}", file=sys.stderr)
    return items, bad


def _parse_all(path: Path, parse: Parse[T]) -> tuple[list[T], list[BadLine]]:
    items: list[T] = []
    bad: list[BadLine] = []
    for number, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            items.append(parse(line, f"{path}:{number}"))
        except NewerFormat:
            raise
        except BadInput as exc:
            bad.append(BadLine(number, line, str(exc).removeprefix(f"{path}:{number}").lstrip(": ")))
    return items, bad


def repair(path: Path, parse: Parse[T]) -> list[BadLine]:
    """Move damaged lines to FILE.rejected and end the file with a newline (atomically)."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(errors="replace")
    _, bad = _parse_all(path, parse)
    if not bad and (not text or text.endswith("\n")):
        return []
    numbers = {b.number for b in bad}
    kept = [line for n, line in enumerate(text.split("\n"), 1) if line.strip() and n not in numbers]
    if bad:
        with open(path.with_name(path.name + REJECTED), "a") as aside:
            aside.writelines(f"{b.text}\n" for b in bad)
            aside.flush()
            os.fsync(aside.fileno())
    write_atomic(path, "".join(f"{line}\n" for line in kept))
    for b in bad:
        print(f"perfci: warning: {path}:{b.number}: damaged line moved to {path.name}{REJECTED}", file=sys.stderr)
    return bad


def append(path: Path, model: BaseModel, parse: Parse[object]) -> None:
    """Append one line (after repair), flushed to disk before returning."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    repair(path, parse)
    line = (json.dumps(model.model_dump(mode="json", by_alias=True), sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        before = os.lseek(fd, 0, os.SEEK_END)
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        except OSError as exc:  # a full disk: no torn line for the next append to glue onto
            os.ftruncate(fd, before)
            raise write_failure(path, exc, "its earlier lines are unchanged") from exc
    finally:
        os.close(fd)
