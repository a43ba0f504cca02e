"""The culprit the same night: when the nightly's reference A/B of a build: line (a
branch built commit by commit) confirms a regression, the commits between the
reference and tonight are bisected on the same runner, within a time budget, and the
issue names the first slower commit (what Chromium's Pinpoint does for its dashboard).

The search judges the metric the A/B saw most clearly (its change in MDEs: a counter
that went from 0 to 1 per transaction before a throughput 5 % down) in the phases where
the A/B flagged it, each step an A/B sized like the reference A/B; the reference A/B is its
first step (the ends are not measured again). A step is only started inside the
budget (one that started finishes); out of time, the search records the stretch it
narrowed to (`remaining`) and the issue gives the `perfci bisect` that finishes it.
Every commit is built by scripts/build-server (cached per commit: tomorrow's search
over the same commits builds nothing)."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

from perfci.judge.bisect import OutOfTime, Step, bisect, step_of
from perfci.judge.paired import PairedVerdict
from perfci.model.culprit import BisectStep, CulpritSearch, LineCommit
from perfci.providers.basedirs import build_line
from perfci.providers.spec import ServerSpec, parse_spec
from perfci.sessions.sized_ab import AbPlan, run_sized, sides_of
from perfci.util.errors import BadInput
from perfci.util.progress import Progress

DEFAULT_BUDGET_MINUTES = 90.0  # with the run and the reference A/B, inside the bench job's 240


def commit_line_of(a_args: tuple[str, tuple[str, ...]], b_args: tuple[str, tuple[str, ...]]
                   ) -> tuple[ServerSpec, ServerSpec] | None:
    """The two ends when the reference and tonight are builds of one flavor at two refs
    with the same config (a search walks commits, not configs); else None."""
    if a_args[1] != b_args[1]:
        return None
    try:
        good, bad = parse_spec(a_args[0]), parse_spec(b_args[0])
    except BadInput:
        return None
    if good.scheme != "build" or bad.scheme != "build" or good.flavor != bad.flavor or good.ref == bad.ref:
        return None
    return good, bad


def clearest(rows: list[PairedVerdict], flagged: list[str]) -> str:
    """The flagged key the A/B saw most clearly (its change in MDEs): the one a
    search's smaller A/Bs are likeliest to see again at every step."""
    def clarity(r: PairedVerdict) -> float:
        change = abs(math.log(r.estimate.ratio)) if r.estimate and r.estimate.ratio > 0 else 0.0
        return change / math.log1p(r.mde) if r.mde else change
    judged = [r for r in rows if r.key in flagged]
    return max(judged, key=clarity).key if judged else flagged[0]


def lead_regression(flagged: list[str], lead: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(metric, phases) the search judges: the lead key's metric (default the first
    flagged), in every phase the A/B flagged it (keys are PHASE.METRIC)."""
    metric = (lead or flagged[0]).split(".", 1)[1]
    return metric, tuple(dict.fromkeys(k.split(".", 1)[0] for k in flagged if k.split(".", 1)[1] == metric))


def resumed_stretch(pending: CulpritSearch | None, line: list[str], metric: str) -> tuple[list[str], Step] | None:
    """Where last night's search out of time left off, when it applies tonight: the same
    reference and metric, and its stretch on tonight's line (tonight's commit descends
    from its bad end). The stretch, and the step that put its bad end apart."""
    if pending is None or not pending.remaining or pending.good != line[0] or pending.metric != metric:
        return None
    start, stop = pending.remaining
    if start not in line or stop not in line:
        return None
    apart = next((s for s in reversed(pending.steps) if s.candidate == stop and s.verdict == "regression"), None)
    if apart is None:
        return None
    return line[line.index(start):line.index(stop) + 1], Step(start, stop, "regression", apart.ratio, apart.low,
                                                              apart.high, apart.mde)


def search_culprit(scenario: str, profile: str, case: str | None, ends: tuple[ServerSpec, ServerSpec],
                   rows: list[PairedVerdict], flagged: list[str], ab: AbPlan, parent: Path, out_dir: Path,
                   progress: Progress, runner_class: str, budget_minutes: float,
                   pending: CulpritSearch | None = None) -> CulpritSearch:
    """Bisect the commits from `ends[0]` to `ends[1]`, the reference A/B (`rows`, which
    flagged `flagged`) standing for the ends' step; or, where last night's search ran
    out of time (`pending`), the stretch it left."""
    deadline = time.monotonic() + budget_minutes * 60
    metric, phases = lead_regression(flagged, clearest(rows, flagged))
    commits = build_line(*ends)
    line = [c.spec(ends[0].flavor) for c in commits]
    phase_rows = [r for r in rows if r.key.split(".", 1)[0] in phases]
    known = step_of(line[0], line[-1], phase_rows, metric)
    earlier: list[BisectStep] = []
    if resumed := resumed_stretch(pending, line, metric):
        assert pending is not None
        line, known = resumed
        earlier, phases = pending.steps, tuple(pending.phases)
        progress.info(f"culprit search resumes where last night's ran out of time: {line[0]} .. {line[-1]}")
    log = out_dir / f"culprit-{scenario}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.jsonl"
    out_dir.mkdir(parents=True, exist_ok=True)
    step_ab = dataclasses.replace(ab, phases=phases, explain="never")  # the Why is the reference A/B's

    def measure(reference: str, candidate: str) -> Step:
        if time.monotonic() >= deadline:
            raise OutOfTime()
        progress.info(f"== culprit search: {candidate} against {reference}")
        done = run_sized(scenario, profile, sides_of(reference, candidate), parent, case, step_ab, out_dir / "ab",
                         progress, runner_class)
        step = step_of(reference, candidate, done.rows, metric)
        with log.open("a") as f:
            f.write(json.dumps({**dataclasses.asdict(step), "bursts_file": str(done.bursts_file)}) + "\n")
        progress.info(f"   {step.line()}")
        return step

    progress.info(f"culprit search over {len(line)} commits, {metric} in {', '.join(phases)}, "
                  f"budget {budget_minutes:g} min")
    found = bisect(line, measure, retries=1, ends=known)
    steps = [BisectStep(reference=s.reference, candidate=s.candidate, verdict=s.verdict, ratio=s.ratio, low=s.low,
                        high=s.high, mde=s.mde) for s in found.steps]
    return CulpritSearch(
        metric=metric, phases=list(phases), good=commits[0].spec(ends[0].flavor), bad=commits[-1].spec(ends[0].flavor),
        commits=[LineCommit(sha=c.sha, subject=c.subject) for c in commits], summary=found.summary(),
        first_bad=found.first_bad, last_good=found.last_good,
        remaining=list(found.remaining) if found.remaining else None,
        steps=[*earlier, *steps[1:]] if earlier else steps,  # (a resumed search's first step is last night's)
        budget_minutes=budget_minutes, log=str(log) if log.exists() else "")
