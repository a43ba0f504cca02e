"""Result files: the one loader (with the upgrade chain) and the one writer.

A file of any known schema version loads: each upgrade step turns version N into
N+1 until the current model validates it (as pyperf and asv upgrade old files).
An unknown version, a file that is not JSON, or a field that does not fit the model
is one line naming the file and the field (exit 2), never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import JsonValue, ValidationError

from perfci.model.identity import server_line
from perfci.model.result import RESULT_SCHEMA, Result
from perfci.model.scenario import validation_message
from perfci.util.errors import BadInput
from perfci.util.files import write_json_atomic

JsonObject = dict[str, JsonValue]


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 -> /2: headline ratios become records (metric, numerator, denominator
    were joined in one key: "qps_write after/before"); the server gets its line."""
    out = dict(data)
    headline = data.get("headline") or {}
    records: list[JsonValue] = []
    if isinstance(headline, dict):
        for key, value in headline.items():
            metric, _, pair = key.partition(" ")
            numerator, _, denominator = pair.partition("/")
            records.append({"metric": metric, "numerator": numerator, "denominator": denominator, "value": value})
    out["headline"] = records
    server = data.get("server")
    if isinstance(server, dict) and server.get("flavor") and server.get("version"):
        out["server"] = {**server, "line": server_line(str(server["flavor"]), str(server["version"]))}
    if out.get("dataset") is None:
        out["dataset"] = {}
    out["schema"] = "perfci.result/2"
    return out


# schema version -> the step that turns it into the next one
UPGRADES: dict[str, Callable[[JsonObject], JsonObject]] = {
    "perfci.result/1": _v1_to_v2,
}
KNOWN_SCHEMAS = (*UPGRADES, RESULT_SCHEMA)


def upgrade(data: JsonObject) -> JsonObject:
    """Bring a result document of any known version to the current one."""
    seen = set()
    while data.get("schema") != RESULT_SCHEMA:
        version = str(data.get("schema"))
        if version not in UPGRADES or version in seen:
            raise ValueError(f"schema {data.get('schema')!r} is not a perfci result; known: {', '.join(KNOWN_SCHEMAS)}")
        seen.add(version)
        data = UPGRADES[version](data)
    return data


def parse_result(data: object, source: str) -> Result:
    if not isinstance(data, dict):
        raise BadInput(f"{source}: not a result file (a JSON object is expected)")
    try:
        current = upgrade(data)
    except ValueError as exc:
        raise BadInput(f"{source}: not a result file ({exc})") from None
    try:
        return Result.model_validate(current)
    except ValidationError as exc:
        raise BadInput(validation_message(f"{source} (result)", exc, Result)) from None


def load_result(path: Path) -> Result:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{path}: no such result file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a result file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not a result file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: not a result file (invalid JSON: {exc.msg} at line {exc.lineno})") from None
    return parse_result(data, str(path))


def write_result(path: Path, result: Result) -> None:
    """Atomically: a reader never sees half a result."""
    write_json_atomic(path, result.dump())


def expand(paths: list[Path]) -> list[Path]:
    """Result files, with directories expanded to the *.json files in them."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    if not out:
        raise BadInput("no result files given (or the directories hold no *.json)")
    return out
