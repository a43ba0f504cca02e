"""Confirmations on disk: <result id>.confirmation.json in the confirm directory."""

from __future__ import annotations

import json
from pathlib import Path

from perfci.model.confirmation import CONFIRMATION_FILE, SUFFIX, Confirmation
from perfci.util.files import write_atomic


def save(confirmation: Confirmation, out_dir: Path) -> Path:
    path = out_dir / f"{confirmation.result_id}{SUFFIX}"
    write_atomic(path, json.dumps(confirmation.dump(), indent=1) + "\n")
    return path


def load_all(directory: Path) -> dict[str, Confirmation]:
    """Confirmations by the nightly result they judge; a missing directory has none."""
    found: dict[str, Confirmation] = {}
    for path in sorted(Path(directory).glob(f"*{SUFFIX}")):
        c = CONFIRMATION_FILE.load(path)
        found[c.result_id] = c
    return found
