"""The nightly's A/B against its reference: on the same runner, tonight's server (B)
side by side with the case's reference (A), interleaved bursts, sized for a target
effect (sessions/sized_ab.py). It runs when
- `regression`: tonight regressed against its baseline (the A/B confirms it or not:
  the runner's drift between nights opens no issue);
- `server-changed`: tonight's server or config is not the reference's, even when no
  threshold saw anything: a few-percent slowdown, far inside the nights' noise, is
  seen by the A/B that same night (and opens its issue).
The reference is the newest sample of the case's baseline (the last accepted night:
standing regressions never enter it): how it was run (server spec and `--config`
overrides) is in its reproduce command. It must be trusted: `local`, or a spec pinned
in servers.yaml now or in its git history (a bumped id's old build). The A/B uses a
fixed-work profile (default `smoke`: nightly phases are time-boxed and cannot be
split into bursts). Its outcome, per case:
- confirmed: the A/B flags a judged regression of B; when both are builds of one
  branch, the commits between them are searched for the first slower one
  (sessions/culprit_search.py);
- not-confirmed: the A/B sees none;
- not-run: the A/B could not say (tonight's server and config are the reference's but
  its build changed behind the same spec, the reference is not runnable or not
  trusted, the phases cannot be split, the A/B failed). A threshold regression stands,
  and the issue says why it is unconfirmed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

from perfci.judge import design
from perfci.judge.burst_verdicts import run_alpha
from perfci.judge.compare import CaseComparison, worst_first
from perfci.judge.paired import PairedVerdict
from perfci.model.ab_verdict import SideArgs
from perfci.model.abratio import AbRatio
from perfci.model.baseline import Baseline, Sample
from perfci.model.confirmation import Confirmation, PhaseChoice, Trigger
from perfci.model.culprit import CulpritSearch
from perfci.model.result import Result
from perfci.providers.basedirs import on_build_line
from perfci.providers.mycnf import parse_trusted_override
from perfci.providers.servers import id_of_spec, load_servers, pinned_in_git_history, resolve_server, specs_in_git_history
from perfci.providers.spec import parse_spec
from perfci.sessions.culprit_search import clearest, commit_line_of, lead_regression, search_culprit
from perfci.sessions.rounds import Side
from perfci.sessions.sized_ab import AbPlan, SizedAB, measured_phases, plan_and_size, run_sized, size_of
from perfci.store import culprit_files
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.progress import Progress

DEFAULT_PROFILE = "smoke"


RunArgs = tuple[str, tuple[str, ...]]


def run_args(run: Result | Sample) -> RunArgs | None:
    """(server spec, --config overrides in a stable order) a result or sample ran with;
    None if it names no server. Typed (`rerun`); a record of a perfci from before it has
    only the command line, read as perfci wrote it (the upgrade path)."""
    if run.rerun is not None:
        return run.rerun.server, tuple(sorted(run.rerun.config))
    return legacy_run_args(run.reproduce)


def legacy_run_args(reproduce: str) -> RunArgs | None:
    """A reproduce command line of an older perfci's record (it has no `rerun`)."""
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


def measured_as(result: Result, ab: AbPlan) -> AbPlan:
    """The reference A/B measures what the night did: a counted night's is a counting A/B
    (the same counter where the runner has it), sized for counting's target unless one was
    given."""
    if result.measure != "work" or ab.measure == "work":
        return ab
    target = design.WORK_TARGET_MDE if ab.target == design.DEFAULT_TARGET_MDE else ab.target
    return replace(ab, measure="work", target=target)


def pinned_server(text: str) -> str:
    """The spec of a server a reproduce string names, if this checkout trusts it: `local`,
    an id of servers.yaml, or a spec pinned there, now or in its git history; or a
    `build:FLAVOR@SHA` on the line of a build: spec pinned there (what a nightly of a
    branch records: the commit it built). A reproduce string comes from result files
    and the results branch: a `tarball:`/`build:` spec written there must not decide
    what runs on the benchmark host."""
    resolved = resolve_server(text)
    if (resolved.server_id is None and text != "local" and id_of_spec(text) is None
            and not pinned_in_git_history(text) and not on_a_pinned_build_line(text)):
        raise BadInput(f"server {text!r} is not pinned in servers.yaml: confirm runs only `local`, "
                       "the ids of servers.yaml and the specs pinned there, now or in its git history, "
                       "and the commits of a pinned build: spec's line")
    return resolved.spec


def on_a_pinned_build_line(text: str) -> bool:
    spec = parse_spec(text)
    if spec.scheme != "build" or not re.fullmatch(r"[0-9a-f]{40}", spec.ref):
        return False
    pinned = {e.spec for e in load_servers().servers} | specs_in_git_history()
    lines = [parse_spec(p) for p in sorted(pinned) if p.startswith(f"build:{spec.flavor}@")]
    return any(on_build_line(spec, line) for line in lines)


def last_good(baseline: Baseline) -> Sample | None:
    """The baseline's newest sample that says how it was run."""
    known = [s for s in baseline.samples if s.reproduce]
    return max(known, key=lambda s: s.date) if known else None


def describe(args: RunArgs) -> str:
    return SideArgs(server=args[0], config=list(args[1])).describe()


def trigger_of(comp: CaseComparison, good: Sample | None) -> Trigger | None:
    """Why tonight's result gets a reference A/B (None: it does not)."""
    if comp.regressions:
        return "regression"
    if good is None:
        return None
    tonight, reference = run_args(comp.results[0]), run_args(good)
    if tonight and reference and tonight != reference:
        return "server-changed"
    if comp.results[0].server.full_version != good.server_version and good.server_version:
        return "server-changed"  # same spec, another build behind it: said, not measurable
    return None


def triggered(comparisons: list[CaseComparison]) -> int:
    """How many cases have a reason for a reference A/B tonight (each runs one, unless its
    records cannot say how the reference ran): what the night's confirmations may cost."""
    return sum(trigger_of(comp, last_good(comp.baseline) if comp.baseline else None) is not None
               for comp in comparisons if comp.results)


def confirm_case(comp: CaseComparison, profile: str, ab: AbPlan, parent: Path, out_dir: Path,
                 progress: Progress, runner_class: str, culprit_minutes: float = 0,
                 history_root: Path | None = None) -> Confirmation | None:
    """The reference A/B of one case, or None when it has no reason to run; confirmed on
    a build: line, the commits between are searched for the culprit (`culprit_minutes`
    of budget, 0: not), resuming where last night's search kept in `history_root` ran
    out of time."""
    result = comp.results[0]
    good = last_good(comp.baseline) if comp.baseline else None
    trigger = trigger_of(comp, good)
    if trigger is None:
        return None
    found = Confirmation(result_id=result.id, case=comp.label, status="not-run", reason="", trigger=trigger,
                         nightly_regressions=[r.key for r in comp.regressions], profile=profile,
                         reference_version=good.server_version if good else "")

    def not_run(why: str) -> Confirmation:
        return found.model_copy(update={"reason": why})

    if good is None:
        return not_run("the baseline's samples do not record how they were run (recorded by an older perfci)")
    a_args, b_args = run_args(good), run_args(result)
    if a_args is None or b_args is None:
        return not_run("a reproduce command names no server")
    found = found.model_copy(update={"a": describe(a_args), "b": describe(b_args),
                                     "a_run": SideArgs(server=a_args[0], config=list(a_args[1])),
                                     "b_run": SideArgs(server=b_args[0], config=list(b_args[1]))})
    tonight_version = result.server.full_version or result.server.version
    if a_args == b_args:
        return not_run(f"tonight's server spec and config are the reference's ({describe(a_args)}), but the reference "
                       f"ran {good.server_version or 'an unrecorded version'} and tonight ran {tonight_version}: "
                       "the reference build is no longer what the spec gives, so no A/B can run it (pin builds by "
                       "digest or sha256 to keep references runnable)" if good.server_version != tonight_version
                       and good.server_version else
                       f"tonight's server and config are the reference's ({describe(a_args)}, {good.server_version}): "
                       "an A/B would compare the server with itself; the change lies elsewhere (host, harness, data)"
                       ).model_copy(update={"unchanged_server": good.server_version == tonight_version})
    try:
        # both reproduce strings are data (the history's, tonight's result file): a pinned
        # server, and overrides from the allowlist only
        sides = (Side("a", pinned_server(a_args[0]), [parse_trusted_override(c, "the reference") for c in a_args[1]]),
                 Side("b", pinned_server(b_args[0]), [parse_trusted_override(c, "tonight's run") for c in b_args[1]]))
        case = None if result.case == "default" else result.case
        progress.info(f"== reference A/B of {comp.label} ({trigger}): A {found.a} (reference) vs B {found.b}")
        ab = measured_as(result, ab)
        ab, choice = phases_to_run(comp, profile, sides, parent, case, ab, runner_class)
        if choice:
            found = found.model_copy(update={"phases": choice})
            progress.info(f"reference A/B of {choice.said()}")
        done = run_sized(result.scenario.name, profile, sides, parent, case, ab, out_dir, progress, runner_class)
    except BadInput as exc:
        return not_run(f"the reference A/B could not run: {exc}")
    except InfraFailure as exc:
        return not_run(f"the reference A/B failed: {exc}").model_copy(update={"failed": True})
    flagged = done.regressions
    line = commit_line_of(a_args, b_args) if flagged and culprit_minutes > 0 else None
    culprit = None
    if line:
        try:
            pending = culprit_files.pending(history_root, comp.identity) if history_root else None
            culprit = search_culprit(result.scenario.name, profile, case, line, done.rows, flagged, ab, parent,
                                     out_dir / "culprit", progress, runner_class, culprit_minutes, pending)
        except (BadInput, InfraFailure) as exc:  # the confirmation stands; the issue says why no commit is named
            metric, phases = lead_regression(flagged, clearest(done.rows, flagged))
            culprit = CulpritSearch(metric=metric, phases=list(phases), good=line[0].text, bad=line[1].text,
                                    commits=[], summary=f"the search for the commit could not finish: {exc}",
                                    budget_minutes=culprit_minutes)
    return found.model_copy(update={
        "culprit": culprit,
        "status": "confirmed" if flagged else "not-confirmed",
        "reason": (f"the A/B flags {', '.join(flagged)}" if flagged else
                   "the A/B of the two servers, side by side, finds no judged regression of tonight's server"),
        "ab_regressions": flagged, "bursts_file": str(done.bursts_file), "report": done.report,
        "why": done.why, "why_line": done.verdict.why_line if done.verdict else None,
        "ratios": ratios_of(done.rows), "sizing": done.sizing, "size": done.size, "alpha": run_alpha(done.run),
        "flamegraphs": flamegraphs_of(done, out_dir)})


def phases_to_run(comp: CaseComparison, profile: str, sides: tuple[Side, Side], parent: Path, case: str | None,
                  ab: AbPlan, runner_class: str) -> tuple[AbPlan, PhaseChoice | None]:
    """The phases the reference A/B runs (#55): all of them when that A/B sees
    design.PHASE_MDE_LIMIT within its budget (or phases were given); else those that looked
    worst tonight (judge/compare.worst_first), as many as still see it, at least one."""
    if ab.phases:
        return ab, None
    try:
        whole = plan_and_size(comp.results[0].scenario.name, profile, sides, parent, case, ab, runner_class)
    except BadInput:  # the A/B's own planning says what is wrong, in its words (run_sized)
        return ab, None
    phases = measured_phases(whole.plans)
    if whole.design.mde <= design.PHASE_MDE_LIMIT or len(phases) < 2:
        return ab, None
    order = worst_first(comp.rows, phases)
    chosen, size = design.phases_within(order, lambda some: size_of(whole.plans, ab, whole.noise_model, some))
    return replace(ab, phases=chosen), PhaseChoice(run=list(chosen), of=len(phases), limit=design.PHASE_MDE_LIMIT,
                                                   mde_all=whole.design.mde, mde_run=size.mde)


def flamegraphs_of(done: SizedAB, out_dir: Path) -> list[str]:
    """The A/B's flame graphs, relative to the confirmation's directory (the A/B's out_dir)."""
    if done.explain_dir is None or not done.explain_dir.is_dir():
        return []
    return sorted(str(p.relative_to(out_dir)) for p in done.explain_dir.glob("*.svg"))


def ratios_of(rows: list[PairedVerdict]) -> dict[str, AbRatio]:
    return {r.key: AbRatio(a=r.a_mean, b=r.b_mean, ratio=r.estimate.ratio, low=r.estimate.low, high=r.estimate.high,
                           confidence=r.estimate.confidence, mde=r.mde, verdict=str(r.verdict))
            for r in rows if r.spec is not None and r.estimate is not None}


