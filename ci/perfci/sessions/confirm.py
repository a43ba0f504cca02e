"""The second stage of a nightly alert: before an issue is opened, a nightly run that
looks like a regression against its baseline is re-checked by an interleaved A/B
against the last good server of its line, on the same runner.

"Last good" is the newest sample of the case's baseline: how it was run (server
spec and `--config` overrides) is in its reproduce command. The A/B uses a
fixed-work profile (default `smoke`: nightly phases are time-boxed and cannot be
split into bursts). Its outcome, per regressed case:
- confirmed: the A/B flags a judged regression of B (this run's server) too;
- not-confirmed: the A/B sees none. The nightly's Outcome.REGRESSION was the runner's
  drift or noise between nights: no issue is opened (the A/B is in the job's output);
- not-run: the A/B could not say (this run's server and config are the baseline's
  own, the last good server is not available, the phases cannot be split, the A/B
  failed). The nightly verdict stands, and the issue says why it is unconfirmed.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Literal

from pydantic import Field

from perfci.judge import noise
from perfci.judge.bursts import judge_run
from perfci.judge.compare import CaseComparison
from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.result import ResultId
from perfci.model.verdicts import Outcome
from perfci.providers.mycnf import parse_override
from perfci.providers.servers import id_of_spec, resolve_server
from perfci.report.interleaved import interleaved_markdown
from perfci.sessions.interleave import plan_sides, run_interleaved
from perfci.sessions.rounds import Side
from perfci.store.baseline import Baseline, Sample
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.files import write_atomic
from perfci.util.paths import baselines_dir
from perfci.util.progress import Progress
from perfci.util.text import code_span, inert_markdown, markdown

DEFAULT_PROFILE = "smoke"
DEFAULT_BURSTS = 120  # pairs per phase: 5 % at >= 90 % power with this runner's burst noise (README), ~12 min of bursts
SUFFIX = ".confirmation.json"


class Confirmation(StrictModel):
    schema_: Literal["perfci.confirmation/2"] = Field("perfci.confirmation/2", alias="schema")
    result_id: ResultId
    case: str
    status: Literal["confirmed", "not-confirmed", "not-run"]
    reason: str
    nightly_regressions: list[str]
    a: str = Field("", description="the last good server: spec and overrides")
    b: str = Field("", description="this run's server: spec and overrides")
    profile: str = ""
    ab_regressions: list[str] = []
    bursts_file: str | None = None
    report: str = Field("", description="the A/B's Markdown report")
    # /2
    failed: bool = Field(False, description="not-run because the A/B failed on this runner (infrastructure), "
                                            "not because there was nothing to compare")

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


def run_args(reproduce: str) -> tuple[str, tuple[str, ...]] | None:
    """(server spec, --config overrides) of a reproduce command; None if it names no server."""
    try:
        args = shlex.split(reproduce)
    except ValueError:
        return None
    spec, configs = None, []
    for flag, value in zip(args, args[1:]):
        if flag == "--server":
            spec = value
        elif flag == "--config":
            configs.append(value)
    return (spec, tuple(sorted(configs))) if spec else None


def pinned_server(text: str) -> str:
    """The spec of a server a reproduce string names, if this checkout trusts it: `local`,
    an id of servers.yaml, or a spec pinned there. A reproduce string comes from result
    files and the results branch: a `tarball:`/`build:` spec written there must not
    decide what runs on the benchmark host."""
    resolved = resolve_server(text)
    if resolved.server_id is None and text != "local" and id_of_spec(text) is None:
        raise BadInput(f"server {text!r} is not pinned in servers.yaml: confirm runs only `local`, "
                       "the ids of servers.yaml and the specs pinned there")
    return resolved.spec


def last_good(baseline: Baseline) -> Sample | None:
    """The baseline's newest sample that says how it was run."""
    known = [s for s in baseline.samples if s.reproduce]
    return max(known, key=lambda s: s.date) if known else None


def describe(args: tuple[str, tuple[str, ...]]) -> str:
    return " ".join([args[0], *(f"--config {c}" for c in args[1])])


def confirm_case(comp: CaseComparison, profile: str, bursts: int, parent: Path, out_dir: Path,
                 progress: Progress, runner_class: str, min_effect: float) -> Confirmation:
    result = comp.results[0]
    found = Confirmation(result_id=result.id, case=comp.label, status="not-run", reason="",
                         nightly_regressions=[r.key for r in comp.regressions], profile=profile)

    def not_run(why: str) -> Confirmation:
        return found.model_copy(update={"reason": why})

    good = last_good(comp.baseline) if comp.baseline else None
    if good is None:
        return not_run("the baseline's samples do not record how they were run (recorded by an older perfci)")
    a_args, b_args = run_args(good.reproduce), run_args(result.reproduce)
    if a_args is None or b_args is None:
        return not_run("a reproduce command names no server")
    found = found.model_copy(update={"a": describe(a_args), "b": describe(b_args)})
    if a_args == b_args:
        return not_run(f"this run's server and config are those of the baseline's newest sample ({describe(a_args)}, "
                       f"{good.server_version}): an A/B would compare the server with itself; the change lies "
                       "elsewhere (host, harness, data, a server build behind the same spec)")
    try:
        sides = (Side("a", pinned_server(a_args[0]), [parse_override(c) for c in a_args[1]]),
                 Side("b", pinned_server(b_args[0]), [parse_override(c) for c in b_args[1]]))
        case = None if result.case == "default" else result.case
        plans = plan_sides(result.scenario.name, profile, sides, parent, case, bursts)
        progress.info(f"== confirmation A/B of {comp.label}: A {found.a} (last good) vs B {found.b}")
        run = run_interleaved(plans, sides, progress, runner_class, bursts)
    except BadInput as exc:
        return not_run(f"the confirmation A/B could not run: {exc}")
    except InfraFailure as exc:
        return not_run(f"the confirmation A/B failed: {exc}").model_copy(update={"failed": True})
    out_dir.mkdir(parents=True, exist_ok=True)
    bursts_file = out_dir / f"{run.id}.bursts.json"
    write_atomic(bursts_file, json.dumps(run.dump(), indent=1) + "\n")
    priors, _ = noise.priors_for(run, baselines_dir() / "noise")
    rows = judge_run(run, plans[1].resolved.compare, min_effect, priors=priors)
    flagged = [r.key for r in rows if r.verdict == Outcome.REGRESSION]
    return found.model_copy(update={
        "status": "confirmed" if flagged else "not-confirmed",
        "reason": (f"the A/B flags {', '.join(flagged)}" if flagged else
                   "the A/B of the two servers, side by side, finds no judged regression of this run's server"),
        "ab_regressions": flagged, "bursts_file": str(bursts_file), "report": interleaved_markdown(run, rows, min_effect)})


def save(confirmation: Confirmation, out_dir: Path) -> Path:
    path = out_dir / f"{confirmation.result_id}{SUFFIX}"
    write_atomic(path, json.dumps(confirmation.dump(), indent=1) + "\n")
    return path


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """/1 did not tell a failed A/B from one with nothing to compare: neither failed."""
    return {**data, "schema": "perfci.confirmation/2"}


CONFIRMATION_FILE = FileFormat("confirmation", Confirmation, "perfci.confirmation/2",
                               upgrades={"perfci.confirmation/1": _v1_to_v2})


def load_all(directory: Path) -> dict[str, Confirmation]:
    """Confirmations by the nightly result they judge; a missing directory has none."""
    found: dict[str, Confirmation] = {}
    for path in sorted(Path(directory).glob(f"*{SUFFIX}")):
        c = CONFIRMATION_FILE.load(path)
        found[c.result_id] = c
    return found


def markdown_section(c: Confirmation) -> list[str]:
    """The confirmation's part of an issue body."""
    status = {"confirmed": "**confirmed**", "not-confirmed": "not confirmed", "not-run": "not run"}[c.status]
    lines = ["", "### Confirmation A/B (same runner, both servers alive, interleaved bursts)", "",
             f"- {status}: {markdown(c.reason)}"]  # a confirmation file is input: every text escaped
    if c.a:
        lines.append(f"- A, last good: {code_span(c.a)} · B, this run: {code_span(c.b)} · profile {code_span(c.profile)}")
    if c.report:
        lines += ["", "<details><summary>The A/B's report</summary>", "", inert_markdown(c.report.strip()), "",
                  "</details>"]
    return lines
