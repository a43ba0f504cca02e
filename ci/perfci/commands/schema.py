"""`perfci schema KIND`: the JSON Schema of perfci's file formats."""

from __future__ import annotations

import json

import click
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from perfci.model.result import Result, ResultV1
from perfci.report.comparison import ComparisonFile
from perfci.store.baseline import Baseline
from perfci.store.history import HistoryRecord


def models() -> dict[str, type[BaseModel]]:
    return {"result": Result, "baseline": Baseline, "history": HistoryRecord, "comparison": ComparisonFile}


KINDS = ("result", "baseline", "history", "comparison")


def json_schema(kind: str) -> dict[str, object]:
    """The current format's schema; for results, any version `perfci` still loads
    (the current one or an older one it upgrades on load)."""
    if kind == "result":
        _, top = models_json_schema([(Result, "validation"), (ResultV1, "validation")], by_alias=True,
                                    title="perfci result (perfci.result/2, or /1 which is upgraded on load)")
        defs = top["$defs"]
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": top["title"],
                "oneOf": [{"$ref": "#/$defs/Result"}, {"$ref": "#/$defs/ResultV1"}], "$defs": defs}
    schema = models()[kind].model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


@click.command()
@click.argument("kind", type=click.Choice(KINDS), default="result")
def schema(kind: str) -> None:
    """Print the JSON Schema of a file format: result (default), baseline, history or comparison.

    Older result files (perfci.result/1) are upgraded on load; the schema describes
    the current version."""
    click.echo(json.dumps(json_schema(kind), indent=2))
