"""`perfci doctor`: is this host ready to be a benchmark runner (see host/host_checks.py)?"""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.commands.project_files import pin_disagreements, project_pins
from perfci.host import host_checks
from perfci.model.outputs import DoctorFinding, DoctorReport
from perfci.model.scenario import cases, load_scenario
from perfci.providers.capabilities import parse_size
from perfci.run import profiler
from perfci.util.errors import EXIT_INFRA
from perfci.util.paths import project_root

MARKS = {"ok": "ok  ", "info": "info", "warn": "WARN", "fail": "FAIL"}


def buffer_pools(scenario: str, profile: str) -> list[int]:
    loaded, path = load_scenario(scenario)
    return [parse_size(str(r.config.get("innodb_buffer_pool_size", "128M"))) for r in cases(loaded, profile, str(path))]


def profiling() -> host_checks.Finding:
    """Whether the explain pass can take CPU profiles here: perf and inferno present,
    perf allowed to profile another process, and a test record that samples."""
    works, found = profiler.record_check()
    if works:
        return host_checks.Finding("CPU profiles (explain pass)", "ok", found)
    return host_checks.Finding("CPU profiles (explain pass)", "warn", f"{found}: the explain pass reports digests and "
                               "counters only", "scripts/install-deps installs perf (linux-perf) and inferno; "
                               f"as a non-root runner: {profiler.ADVICE}")


def workflow_pins() -> host_checks.Finding:
    """Whether the project's workflows pin one perfci commit (a job of the nightly and
    a job of the PR check running two perfcis is a half-done upgrade)."""
    root = project_root()
    found = project_pins(root) if root is not None else []
    if not found:
        return host_checks.Finding("perfci pins", "info", "no perfci pin here (perfci's own checkout, or no project)")
    problems = pin_disagreements(found)
    if problems:
        return host_checks.Finding("perfci pins", "fail", "; ".join(problems), "perfci init --upgrade SHA")
    return host_checks.Finding("perfci pins", "ok", f"{len(found)} pins, all {found[0].sha[:12]}")


@click.command()
@click.option("--runner-dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="The actions-runner directory: check the job hooks it names, as the runner starts them.")
@click.option("--scenario", help="Check memory for an interleaved A/B of this scenario (two servers at once).")
@options.profile
@click.option("--workdir", type=click.Path(path_type=Path), help="Where datadirs go (default: the temp dir).")
@options.json_output("doctor")
def doctor(runner_dir: Path | None, scenario: str | None, profile: str, workdir: Path | None, json_out: Path | None) -> int:
    """Check this host as a benchmark runner: other servers, tools, CPU governor, THP,
    swap, cgroup freezer, thread CPU time, PMU, disk, memory for two buffer pools, the
    runner's job hooks, the host lock, CPU profiles for the explain pass (a test record),
    the project's perfci pins (one commit). Each problem comes with its fix.

    \b
    Exit codes: 0 ready (warnings may remain), 3 a check failed (perfci would refuse
    or could not run here), 2 bad input.
    \b
    Examples:
      perfci doctor
      perfci doctor --runner-dir /home/runner/actions-runner --scenario change-buffer-matrix"""
    pools = buffer_pools(scenario, profile) if scenario else []
    findings = [*host_checks.diagnose(runner_dir, pools, f"{scenario} --profile {profile}", workdir), profiling(), workflow_pins()]
    say = options.text_out(json_out)
    width = max(len(f.check) for f in findings)
    for f in findings:
        say(f"{MARKS[f.status]}  {f.check:<{width}}  {f.found}")
        if f.fix:
            say(f"      {'':<{width}}  fix: {f.fix}")
    failed = [f.check for f in findings if f.status == "fail"]
    say(f"\n{'not ready: ' + ', '.join(failed) if failed else 'ready'}"
        f" ({sum(f.status == 'warn' for f in findings)} warning(s))")
    typed = [DoctorFinding.model_validate(d) for d in host_checks.as_dicts(findings)]
    options.emit_json(DoctorReport(ready=not failed, findings=typed).dump(), json_out)
    return EXIT_INFRA if any(f.status == "fail" for f in findings) else 0
