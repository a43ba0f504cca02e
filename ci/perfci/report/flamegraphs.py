"""Flame graphs of an explain pass, drawn by inferno (a maintained port of Brendan
Gregg's FlameGraph): one per side and a differential one (inferno-diff-folded: the
B graph, each frame coloured by how its CPU changed from A, red grew, blue shrank); and
those of a counted A/B, from callgrind's call graph (`counted`).
Both sides ran the same seeded transactions, so the raw CPU of each is per the same
work: no normalisation by sample count (which would hide a uniform slowdown)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from perfci.judge.work_profile import estimated_stacks
from perfci.model.bursts import InterleavedRun
from perfci.model.explain import folded_text
from perfci.run.profiler import tool
from perfci.util.errors import InfraFailure
from perfci.util.files import write_atomic


def _inferno(name: str, args: list[str], stdin: str) -> str:
    exe = tool(name)
    if exe is None:
        raise InfraFailure(f"{name} is not installed (scripts/install-deps installs inferno)")
    done = subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise InfraFailure(f"{name} failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def flamegraph(folded: Path, out: Path, title: str, countname: str = "ns", subtitle: str = "") -> Path:
    extra = ["--subtitle", subtitle] if subtitle else []
    svg = _inferno("inferno-flamegraph", ["--title", title, *extra, "--countname", countname, "--hash"],
                   folded.read_text())
    write_atomic(out, svg)
    return out


def differential(a: Path, b: Path, out: Path, title: str, countname: str = "ns", what: str = "CPU") -> Path:
    diff = _inferno("inferno-diff-folded", [str(a), str(b)], "")
    svg = _inferno("inferno-flamegraph", ["--title", title, "--subtitle", f"red: more {what} on B, blue: less (same work)",
                                          "--countname", countname], diff)
    write_atomic(out, svg)
    return out


ESTIMATED = "paths estimated from callgrind's call graph (a function's callees split in proportion, as gprof did)"


def counted(run: InterleavedRun, phase: str, target: Path) -> list[Path]:
    """A counted A/B's flame graphs of PHASE from its bursts' call graph (callgrind's
    exact own and edge counts; the stacks estimated, judge/work_profile.py): each side's
    and the differential one, with the folded files they are drawn from."""
    folded = {}
    for side in ("a", "b"):
        stacks = estimated_stacks(run.work_functions.get(phase, {}).get(side, {}),
                                  run.work_calls.get(phase, {}).get(side, []))
        folded[side] = target / f"{phase}-{side}.folded"
        write_atomic(folded[side], folded_text({stack: round(v) for stack, v in stacks.items() if round(v) > 0}))
    lines = {s.name: s.line for s in run.sides}
    drawn = [flamegraph(folded[side], target / f"{phase}-{side}.svg",
                        f"{phase}: {side.upper()} ({lines.get(side, '?')}), instructions per transaction",
                        countname="instructions", subtitle=ESTIMATED) for side in ("a", "b")]
    drawn.append(differential(folded["a"], folded["b"], target / f"{phase}-diff.svg",
                              f"{phase}: B against A, instructions per transaction (callgrind; {ESTIMATED})",
                              countname="instructions", what="instructions"))
    return drawn
