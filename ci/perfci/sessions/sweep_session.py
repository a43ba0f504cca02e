"""A sweep: every server of a list A/B'd against the first (the base) on each case of
a scenario, interleaved; per case and server, the judged metrics' B/base with their
intervals. Resumable: the sweep file is rewritten (atomically) after every finished
A/B, and a rerun with the same scenario, profile and servers skips the finished ones.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from perfci.model.scenario import cases, load_scenario, only_phases
from perfci.model.sweep import SWEEP_FILE, Sweep, SweepCell
from perfci.providers.servers import resolve_server
from perfci.sessions.confirm import ratios_of
from perfci.sessions.sized_ab import AbPlan, cost_line, run_sized, sides_of
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.files import write_atomic
from perfci.util.progress import Progress


def sweep_path(out_dir: Path, scenario: str, profile: str) -> Path:
    return out_dir / f"sweep-{scenario}-{profile}.json"


def start(scenario: str, profile: str, servers: list[str], runner_class: str, out_dir: Path,
          phases: tuple[str, ...] = ()) -> Sweep:
    """The sweep to continue (same scenario content, profile, servers and runner class;
    `phases`, the measured phases, are part of the content) or a new one."""
    if len(servers) < 2:
        raise BadInput("--servers: a sweep needs the base and at least one more server")
    for server in servers:
        resolve_server(server)  # typos: one line, before anything runs
    loaded, scenario_path = load_scenario(scenario)
    resolved = [only_phases(r, phases) for r in cases(loaded, profile, str(scenario_path), None)]
    content_hash = resolved[0].content_hash()
    path = sweep_path(out_dir, loaded.name, profile)
    if path.is_file():
        kept = SWEEP_FILE.load(path)
        if (kept.scenario_hash, kept.servers, kept.runner_class) == (content_hash, servers, runner_class):
            return kept
        raise BadInput(f"{path}: a sweep of other servers, scenario content or runner class is there "
                       "(move it away, or give another --out)")
    return Sweep(scenario=loaded.name, scenario_hash=content_hash, profile=profile, servers=servers,
                 runner_class=runner_class, started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def run(sweep: Sweep, scenario: str, ab: AbPlan, parent: Path, out_dir: Path, progress: Progress,
        case_patterns: list[str] | None = None) -> Sweep:
    """Every (case, server) not finished yet, the base as side A. A server that cannot
    run a case (an option it lacks, an A/B that fails) is recorded and the sweep goes on."""
    loaded, scenario_path = load_scenario(scenario)
    path = sweep_path(out_dir, sweep.scenario, sweep.profile)
    base = sweep.servers[0]
    chosen = cases(loaded, sweep.profile, str(scenario_path), case_patterns)
    left = sum(1 for r in chosen for s in sweep.servers[1:] if (c := sweep.cell(r.case, s)) is None or c.status == "failed")
    progress.info(cost_line(f"the sweep ({left} of {len(chosen) * (len(sweep.servers) - 1)} left)", left, left, ab))
    for resolved in chosen:
        for server in sweep.servers[1:]:
            done = sweep.cell(resolved.case, server)
            if done is not None and done.status != "failed":
                progress.info(f"sweep: {resolved.case} {server} kept from the earlier run ({done.status})")
                continue
            progress.info(f"== sweep: case {resolved.case}: {server} against {base}")
            cell = _measure(sweep, scenario, resolved.case, base, server, ab, parent, out_dir, progress)
            kept = [c for c in sweep.cells if (c.case, c.server) != (resolved.case, server)]
            sweep = sweep.model_copy(update={"cells": [*kept, cell]})
            write_atomic(path, json.dumps(sweep.dump(), indent=1) + "\n")
    return sweep


def _measure(sweep: Sweep, scenario: str, case: str, base: str, server: str, ab: AbPlan,
             parent: Path, out_dir: Path, progress: Progress) -> SweepCell:
    try:
        done = run_sized(scenario, sweep.profile, sides_of(base, server), parent, None if case == "default" else case,
                         ab, out_dir / "ab", progress, sweep.runner_class)
    except BadInput as exc:
        return SweepCell(case=case, server=server, status="skipped", reason=str(exc))
    except InfraFailure as exc:
        return SweepCell(case=case, server=server, status="failed", reason=str(exc))
    report = done.bursts_file.with_name(done.bursts_file.name.replace(".bursts.json", ".md"))
    a, b = done.run.sides
    return SweepCell(case=case, server=server, status="measured", version=b.full_version, base_version=a.full_version,
                     ratios=ratios_of(done.rows), regressions=done.regressions, sizing=done.sizing,
                     bursts_file=str(done.bursts_file), report_file=str(report), why=done.why or "",
                     explain_dir=str(done.explain_dir) if done.explain_dir else None)
