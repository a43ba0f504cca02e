"""Progress on stderr: a live line with elapsed time on a terminal, plain lines elsewhere
(CI logs), so long steps (prepare, ALTER, measured runs) never look hung.

A long run of many like units (an A/B's bursts) is `plan`ned and `advance`d: a bar with
the time left on a terminal, and in a CI log (no terminal) a line at most every minute,
"instance pair 3 of 9 · before: burst 12/22 on B · 31 % · ~14 min left": the time left
is the elapsed time per unit so far times the units left (an upper bound when a
sequential A/B may stop early)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

LOG_EVERY_S = 60.0  # a plain progress line in a CI log at most this often


def in_ci(env: dict[str, str] | None = None) -> bool:
    """A workflow step (GitHub Actions, act, any CI): plain lines, never a live line, even
    where the runner gives the step a pseudo-terminal (act does: its logs filled with
    the spinner's escape codes)."""
    env = dict(os.environ) if env is None else env
    return any(env.get(name, "").lower() not in ("", "0", "false") for name in ("GITHUB_ACTIONS", "ACT", "CI"))


def time_left(elapsed_s: float, done: int, total: int) -> str:
    """"~14 min left" from the pace so far ("" before the first unit)."""
    if done <= 0 or total <= done:
        return ""
    left = elapsed_s / done * (total - done)
    return f"~{left / 60:.0f} min left" if left >= 90 else f"~{left:.0f} s left"


class Progress:
    def __init__(self, console: Console | None = None, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.console = console or Console(stderr=True, highlight=False, force_terminal=False if in_ci() else None)
        self.quiet = quiet
        self._live: RichProgress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._clock = clock
        self._total = self._done = 0
        self._started = self._logged = 0.0
        self._bar: RichProgress | None = None
        self._bar_task: TaskID | None = None

    def plan(self, total: int) -> None:
        """`total` like units follow (advance() after each)."""
        self._total, self._done = total, 0
        self._started = self._logged = self._clock()

    def advance(self, detail: str) -> None:
        """One unit done (`detail`: where the run is now): the bar, or a CI log line
        at most every LOG_EVERY_S."""
        self._done += 1
        if self.quiet or not self._total:
            return
        now = self._clock()
        share = f"{self._done / self._total:.0%}"
        left = time_left(now - self._started, self._done, self._total)
        if self.console.is_terminal:
            if self._bar is None:
                self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                         TextColumn("{task.percentage:>3.0f} %"), TextColumn("{task.fields[left]}"),
                                         console=self.console, transient=True)
                self._bar.start()
                self._bar_task = self._bar.add_task(detail, total=self._total, completed=self._done - 1, left=left)
            assert self._bar_task is not None
            self._bar.update(self._bar_task, description=detail, completed=self._done, left=left)
        elif now - self._logged >= LOG_EVERY_S or self._done == self._total:
            self._logged = now
            self.info(f"  {detail} · {share}" + (f" · {left}" if left else ""))

    def finish(self) -> None:
        """The planned run is over (all its units, or stopped early)."""
        self._pause_bar()
        self._total = self._done = 0

    def _pause_bar(self) -> None:
        """A step's own live line takes the terminal; the next advance() redraws the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def info(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, markup=False, soft_wrap=True)

    @contextmanager
    def step(self, label: str):
        """Show `label` with a running clock; print its duration when done."""
        start = time.monotonic()
        self._label = label
        self._pause_bar()
        if self.console.is_terminal and not self.quiet:
            self._live = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                      console=self.console, transient=True)
            self._live.start()
            self._task = self._live.add_task(label)
        else:
            self.info(f"  ... {label}")
        ok = False
        try:
            yield self
            ok = True
        finally:
            if self._live:
                self._live.stop()
                self._live = None
            self.info(f"  {'done' if ok else 'FAILED'} {label} ({time.monotonic() - start:.1f}s)")

    def update(self, detail: str) -> None:
        """Extra text on the live line (e.g. the latest interval's tps)."""
        if self._live is not None and self._task is not None:
            self._live.update(self._task, description=f"{self._label}  {detail}")
