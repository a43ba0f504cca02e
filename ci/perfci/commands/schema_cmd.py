"""`perfci schema KIND`: the JSON Schema of each of perfci's file formats."""

from __future__ import annotations

import json

import click
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from perfci.model.ab_verdict import AB_VERDICT_FILE
from perfci.model.baseline import BASELINE_FILE
from perfci.model.bursts import BURSTS_FILE
from perfci.model.confirmation import CONFIRMATION_FILE
from perfci.model.culprit import PENDING_SEARCH_FILE
from perfci.model.explain import EXPLAIN_FILE
from perfci.model.history import HISTORY_LINE, Annotation
from perfci.model.noise import NOISE_FILE
from perfci.model.outputs import (
    BISECT_RECORD,
    CHANGE_LIST,
    CHECK_VERDICT,
    CONFIRM_RUN,
    DOCTOR_REPORT,
    NIGHT_PLAN,
    NIGHT_SUMMARY,
    RUN_OUTPUT,
    SCENARIO_LIST,
    SERVER_LIST,
    VALIDATION,
)
from perfci.model.result import Result, ResultV1
from perfci.model.scenario import Scenario
from perfci.model.sweep import SWEEP_FILE
from perfci.providers.servers import ServersFile
from perfci.report.comparison import COMPARISON_FILE
from perfci.store.results import RESULT_FILE

# kind -> (model, what the file is): the JSON files (read by model/formats.py) and the YAML inputs
FORMATS: dict[str, tuple[type[BaseModel], str]] = {
    "result": (RESULT_FILE.model, "one run of one case (perfci run): RESULT.json"),
    "baseline": (BASELINE_FILE.model, "a case's pinned baseline: baselines/.../CASE.json"),
    "history": (HISTORY_LINE.model, "one line of a case's history: history/.../CASE.jsonl"),
    "annotation": (Annotation, "one line of history/perfci-annotations.jsonl (exclusions, resets)"),
    "comparison": (COMPARISON_FILE.model, "perfci compare --json"),
    "noise": (NOISE_FILE.model, "a case's noise model (perfci calibrate): baselines/noise/.../CASE.json"),
    "ab-verdict": (AB_VERDICT_FILE.model, "an A/B's verdict: perfci ab --json"),
    "bursts": (BURSTS_FILE.model, "an interleaved A/B's bursts: *.bursts.json"),
    "confirmation": (CONFIRMATION_FILE.model, "a nightly A/B against the reference: *.confirmation.json"),
    "culprit-search": (PENDING_SEARCH_FILE.model, "a nightly's commit search out of time, resumed the next night: "
                                                  "history/.../CASE.culprit.json"),
    "explain": (EXPLAIN_FILE.model, "an explain pass: RUN.explain/explain.json (profiles beside it)"),
    "sweep": (SWEEP_FILE.model, "a sweep across servers: sweep-SCENARIO-PROFILE.json, perfci sweep --json"),
    "scenarios": (SCENARIO_LIST.model, "the project's scenarios: perfci list --json"),
    "servers-list": (SERVER_LIST.model, "the named servers and what this host has of them: perfci servers list --json"),
    "validation": (VALIDATION.model, "scenario files and workflow pins checked: perfci validate --json"),
    "changes": (CHANGE_LIST.model, "change points in history files: perfci history changes --json"),
    "doctor": (DOCTOR_REPORT.model, "this host as a benchmark runner: perfci doctor --json"),
    "nightly": (NIGHT_SUMMARY.model, "one night's actions and standing regressions: perfci nightly --json"),
    "run": (RUN_OUTPUT.model, "the results a run wrote, with their run-level metrics: perfci run --json"),
    "plan": (NIGHT_PLAN.model, "what a nightly costs and the runners it needs: perfci plan nightly --json"),
    "confirm": (CONFIRM_RUN.model, "the nightly's A/Bs against the reference: perfci confirm --json"),
    "bisect": (BISECT_RECORD.model, "which release or commit first made a scenario slower: perfci bisect --json"),
    "check-verdict": (CHECK_VERDICT.model, "the PR check's harness check and baselines diff: perfci harness-check "
                                           "--json, perfci baseline diff --json"),
    "scenario": (Scenario, "a scenario: scenarios/NAME.yaml"),
    "servers": (ServersFile, "the named servers: servers.yaml"),
}
KINDS = tuple(FORMATS)


def json_schema(kind: str) -> dict[str, object]:
    """The current format's schema; for results, any version `perfci` still loads
    (the current one or an older one it upgrades on load)."""
    if kind == "result":
        _, top = models_json_schema([(Result, "validation"), (ResultV1, "validation")], by_alias=True,
                                    title="perfci result (perfci.result/2, or /1 which is upgraded on load)")
        defs = top["$defs"]
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": top["title"],
                "oneOf": [{"$ref": "#/$defs/Result"}, {"$ref": "#/$defs/ResultV1"}], "$defs": defs}
    schema = FORMATS[kind][0].model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "description": FORMATS[kind][1], **schema}


HELP = ("Print the JSON Schema of a file format (default: result).\n\n\b\n"
        + "\n".join(f"{k}: {what}" for k, (_, what) in FORMATS.items())
        + "\n\nOlder files are upgraded on load; a file from a newer perfci is refused.")


@click.command(help=HELP)
@click.argument("kind", type=click.Choice(KINDS), default="result")
def schema(kind: str) -> None:
    click.echo(json.dumps(json_schema(kind), indent=2))
