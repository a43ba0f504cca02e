"""Reading result files back (for compare, baselines, history)."""

from __future__ import annotations

import json
from pathlib import Path

from .errors import BadInput

RESULT_SCHEMA = "perfci.result/1"
REQUIRED = ("id", "status", "scenario", "server", "host", "phases")


def load_result(path: Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{path}: no such result file") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: not a result file (invalid JSON: {exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
        raise BadInput(f"{path}: not a result file (schema must be {RESULT_SCHEMA!r})")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise BadInput(f"{path}: result file lacks {', '.join(missing)}")
    return data


def expand(paths: list[Path]) -> list[Path]:
    """Result files, with directories expanded to the *.json files in them."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    if not out:
        raise BadInput("no result files given (or the directories hold no *.json)")
    return out
