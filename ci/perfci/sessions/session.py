"""A session of runs, shared by `perfci run` and `perfci ab`: cases x repeats,
each executed on a fresh server, each result written (with its Markdown summary)
the moment it exists, and an orderly stop on Ctrl-C / SIGTERM."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from perfci.model.result import Result
from perfci.providers.capabilities import Requested
from perfci.report.markdown import matrix_markdown, summary_markdown
from perfci.run.execute import execute
from perfci.run.plan import plan_runs
from perfci.run.snapshots import SnapshotCache
from perfci.store.results import write_result
from perfci.util.files import write_atomic
from perfci.util.progress import Progress


def _cancel(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT or SIGTERM: clean up as for Ctrl-C. A second one must not cut that
    clean-up short (actions/runner sends SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after)."""
    signal.signal(signal.SIGINT, _already_cancelling)
    signal.signal(signal.SIGTERM, _already_cancelling)
    raise KeyboardInterrupt


def _already_cancelling(signum: int, frame: FrameType | None) -> None:
    print(f"perfci: {signal.Signals(signum).name} ignored: already stopping", file=sys.stderr, flush=True)


def handle_cancellation() -> None:
    """Ctrl-C and SIGTERM both end the run: the servers stopped, nothing half-written.
    SIGINT is set explicitly: a process started in the background inherits it ignored,
    and a CI runner cancelling a job sends it."""
    signal.signal(signal.SIGINT, _cancel)
    signal.signal(signal.SIGTERM, _cancel)


def save(result: Result, out_dir: Path) -> tuple[Path, str]:
    """Write the result file and its Markdown summary beside it; returns (path, summary)."""
    path = Path(out_dir) / f"{result.id}.json"
    write_result(path, result)
    summary = summary_markdown(result)
    write_atomic(path.with_suffix(".md"), summary)
    return path, summary


def run_session(scenario: str, profile: str, server_spec: str, overrides: list[Requested], parent: Path,
                out_dir: Path, progress: Progress, case_patterns: list[str] | None = None, repeat: int = 1,
                snapshot_dir: Path | None = None, use_snapshots: bool = True, keep_workdir: bool = False,
                runner_class: str = "local", work_counter: str | None = None,
                on_saved: Callable[[Path, str], None] = lambda path, summary: None
                ) -> tuple[list[Result], Path | None]:
    """Every case of the scenario, `repeat` times; a matrix report when several cases
    ran. Returns the results and the matrix report's path (None for one case).
    `work_counter` (auto, callgrind, pmu): counted runs (run/steps.measure_counted)."""
    written: list[Result] = []
    for i in range(repeat):
        snapshots = SnapshotCache(snapshot_dir) if use_snapshots else None
        plans = plan_runs(scenario, profile, server_spec, overrides, parent, case_patterns, snapshots=snapshots,
                          work_counter=work_counter)
        if repeat > 1:
            progress.info(f"== run {i + 1} of {repeat}")
        for plan in plans:
            result = execute(plan, progress, keep_workdir=keep_workdir, runner_class=runner_class)
            on_saved(*save(result, out_dir))
            written.append(result)
    if len({r.case for r in written}) > 1:
        index_path = Path(out_dir) / f"{written[0].scenario.name}-{profile}-matrix.md"
        write_atomic(index_path, matrix_markdown(written, out_dir))
        return written, index_path
    return written, None
