"""Planning a run: every input check and decision made before a server starts.

A plan holds the resolved case, the opened provider (binary found and identified),
the config after capability mapping (with its notes), and whether the case must
be skipped because the server cannot run it as specified.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from perfci.model.result import ConfigNote, ConfigValue, Rerun
from perfci.model.scenario import ResolvedScenario, cases, config_text, load_scenario, only_phases
from perfci.providers import open_provider
from perfci.providers.basedirs import build_provenance, pinned_to_commit
from perfci.providers.capabilities import Requested, UnknownOption, normalize, plan_config
from perfci.providers.local import LocalServer
from perfci.providers.mycnf import check_not_reserved
from perfci.providers.provider import ServerProvider
from perfci.providers.spec import parse_spec
from perfci.run import sysbench, work
from perfci.run.snapshots import SnapshotCache, data_prefix
from perfci.run.work import WorkSetup
from perfci.util.errors import BadInput
from perfci.util.runner import temp_prefix


@dataclass
class RunPlan:
    """Everything checked and decided before a server starts."""

    resolved: ResolvedScenario
    scenario_file: Path
    provider: ServerProvider
    requested: list[Requested]
    config_options: dict[str, ConfigValue]
    config_notes: list[ConfigNote]
    server_spec: str
    argv: list[str] = field(default_factory=list)
    skip_reason: str | None = None  # the case cannot run as specified on this server
    snapshots: SnapshotCache | None = None  # None: always prepare
    sysbench: str = "unknown"  # `sysbench --version`, checked before any work
    whole_case_hash: str | None = None  # with --phase: the hash of the case before its phases were cut
    work: WorkSetup | None = None  # counting work (run/work.py): how this run or A/B side counts it

    @property
    def case_hashes(self) -> tuple[str, ...]:
        """The hashes a noise model of this case may have been learned on: the whole
        case's (what `perfci calibrate` runs), and with --phase the cut case's too
        (`calibrate --from` the bursts of such A/Bs)."""
        cut, whole = self.resolved.content_hash(), self.whole_case_hash
        return (cut,) if whole is None or whole == cut else (whole, cut)


def plan_runs(scenario_arg: str, profile: str, server_spec: str, overrides: list[Requested],
              parent: Path, case_patterns: list[str] | None = None, argv: list[str] | None = None,
              snapshots: SnapshotCache | None = None, work_counter: str | None = None) -> list[RunPlan]:
    """One plan per case of the scenario at `profile` (one workdir under `parent` each).
    `snapshots`: the cache to use where the scenario allows it (None: always prepare);
    `work_counter` (auto, callgrind, pmu): a counted run (see plan_run)."""
    scenario, path = load_scenario(scenario_arg)
    plans = []
    for resolved in cases(scenario, profile, str(path), case_patterns):
        workdir = parent / f"{temp_prefix()}{uuid.uuid4().hex[:8]}"
        provider = open_provider(server_spec, workdir)
        counting, counted_overrides = counting_setup(provider, resolved, overrides, workdir, work_counter)
        plan = plan_case(resolved, path, provider, server_spec, counted_overrides, argv or [])
        plan.work = counting
        plans.append(use_snapshots(plan, snapshots))
    version = sysbench.version()  # before any work, with an install hint (after the server spec's own checks)
    for plan in plans:
        plan.sysbench = version
    return plans


def plan_run(scenario_arg: str, profile: str, server_spec: str, overrides: list[Requested],
             workdir: Path, argv: list[str] | None = None, case_pattern: str | None = None,
             phases: tuple[str, ...] = (), work_counter: str | None = None) -> RunPlan:
    """The plan of one case (A/B compares one case): the first case matching
    `case_pattern`, or the profile's first case of a matrix scenario; with `phases`,
    measuring only those (checked before the server spec is opened: nothing is built);
    with `work_counter` (auto, callgrind, pmu), the server counts its work per burst
    (run/work.py: checked here, its config added as overrides, recorded like any)."""
    scenario, path = load_scenario(scenario_arg)
    whole = cases(scenario, profile, str(path), [case_pattern] if case_pattern else None)[0]
    resolved = only_phases(whole, phases)
    provider = open_provider(server_spec, workdir)
    counting, overrides = counting_setup(provider, resolved, overrides, workdir, work_counter)
    plan = plan_case(resolved, path, provider, server_spec, overrides, argv or [])
    plan.work = counting
    plan.whole_case_hash = whole.content_hash()
    plan.sysbench = sysbench.version()
    return plan


def counting_setup(provider: ServerProvider, resolved: ResolvedScenario, overrides: list[Requested], workdir: Path,
                   work_counter: str | None) -> tuple[WorkSetup | None, list[Requested]]:
    """How the server counts its work (None: it is timed) and the overrides with the
    config counting needs (recorded like any); the server's launcher is its counter's."""
    if work_counter is None:
        return None, overrides
    # the dumps beside the server's files (a sandboxed server's are elsewhere: its own workdir)
    counting = work.setup(provider, work_counter, resolved.config.get("innodb_buffer_pool_size"),
                          provider.workdir / "callgrind")
    if isinstance(provider, LocalServer):
        provider.launcher = counting.launcher
    return counting, overrides + [Requested(k, v, "override") for k, v in counting.config.items()]


def work_note(plan: RunPlan) -> str | None:
    """How a run or A/B side counted its work and what its server needed for it, for the record."""
    if plan.work is None:
        return None
    config = " ".join(f"{k}={v}" for k, v in plan.work.config.items())
    return plan.work.describe() + (f"; server config for it: {config}" if config else "")


def use_snapshots(plan: RunPlan, cache: SnapshotCache | None) -> RunPlan:
    """Let the plan restore/save its dataset where the scenario and provider allow it."""
    r = plan.resolved
    if cache is not None and r.snapshot and plan.provider.supports_snapshots and data_prefix(r):
        plan.snapshots = cache
    return plan


def plan_case(resolved: ResolvedScenario, path: Path, provider: ServerProvider, server_spec: str,
              overrides: list[Requested], argv: list[str]) -> RunPlan:
    requested = [Requested(k, v, "scenario") for k, v in resolved.config.items()]
    for req in requested:
        check_not_reserved(req.name, f"{path}: server.config")
    requested += overrides
    try:
        config = plan_config(requested, provider.identity, provider.known_options())
    except UnknownOption as exc:
        raise BadInput(f"--config: {exc}; nothing was run") from None
    except ValueError as exc:
        raise BadInput(f"server config: {exc}") from None
    notes = [ConfigNote.model_validate(n) for n in config.notes]
    return RunPlan(resolved, path, provider, requested, config.options, notes, server_spec, argv,
                   skip_reason=unsupported_axis_option(resolved, notes))


def unsupported_axis_option(resolved: ResolvedScenario, notes: list[ConfigNote]) -> str | None:
    """A case whose axis sets an option this server skips would silently run as
    another case: it is skipped instead, with the reason."""
    wanted = {normalize(o) for o in resolved.axis_options}
    for note in notes:
        if note.option in wanted and note.action == "skipped":
            return f"{note.option}={config_text(note.value)} is not supported: {note.reason}"
    return None


def ignored_axis_option(resolved: ResolvedScenario, effective: dict[str, str]) -> str | None:
    """An axis option the server accepted but does not report as set (ignored)."""
    normalized = {normalize(k): v for k, v in effective.items()}
    for name in resolved.axis_options:
        want = config_text(resolved.config[name])
        have = normalized.get(normalize(name))
        if have is None:
            return f"{normalize(name)}={want}: the running server has no such variable"
        if str(have).lower() != want.lower():
            return f"{normalize(name)}={want}: the server ignored it (it reports {have!r})"
    return None


def rerun_of(plan: RunPlan) -> Rerun:
    """What runs this case again: a build: spec on a branch is written as the commit it
    built, from the fork or mirror it was built from (PERFCI_BUILD_REPO)."""
    commit, build = build_provenance(plan.provider.describe())
    counted = plan.work.config if plan.work else {}
    # counting's own config comes with --measure work
    config = [req.name if req.value is None else f"{req.name}={req.value}" for req in plan.requested
              if req.origin == "override" and req.name not in counted]
    return Rerun(scenario=plan.resolved.name, profile=plan.resolved.profile,
                 server=pinned_to_commit(parse_spec(plan.server_spec), commit),
                 case=plan.resolved.case if plan.resolved.case != "default" else None, config=config,
                 measure="work" if plan.work else "time", work_counter=plan.work.method if plan.work else None,
                 build_repo=build.repo if build and build.fork else None)


def reproduce_command(plan: RunPlan) -> str:
    return rerun_of(plan).command()
