"""Flame graphs of an explain pass, drawn by inferno (a maintained port of Brendan
Gregg's FlameGraph): one per side and a differential one (inferno-diff-folded: the
B graph, each frame coloured by how its CPU changed from A, red grew, blue shrank).
Both sides ran the same seeded transactions, so the raw CPU of each is per the same
work: no normalisation by sample count (which would hide a uniform slowdown)."""

from __future__ import annotations

import subprocess
from pathlib import Path

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


def flamegraph(folded: Path, out: Path, title: str) -> Path:
    svg = _inferno("inferno-flamegraph", ["--title", title, "--countname", "ns", "--hash"], folded.read_text())
    write_atomic(out, svg)
    return out


def differential(a: Path, b: Path, out: Path, title: str) -> Path:
    diff = _inferno("inferno-diff-folded", [str(a), str(b)], "")
    svg = _inferno("inferno-flamegraph", ["--title", title, "--subtitle", "red: more CPU on B, blue: less (same work)",
                                          "--countname", "ns"], diff)
    write_atomic(out, svg)
    return out
