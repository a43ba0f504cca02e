"""Result files: their format (with the upgrade chain, read by model/formats.py) and
the one writer."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from perfci.model.formats import FileFormat, JsonObject
from perfci.model.identity import server_line
from perfci.model.result import RESULT_SCHEMA, Result
from perfci.util.errors import BadInput
from perfci.util.files import write_json_atomic


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


RESULT_FILE = FileFormat("result", Result, RESULT_SCHEMA, upgrades={"perfci.result/1": _v1_to_v2})


def parse_result(data: object, source: str) -> Result:
    return RESULT_FILE.parse(data, source)


def load_result(path: Path) -> Result:
    return RESULT_FILE.load(path)


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
