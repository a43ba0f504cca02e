"""Progress on stderr: a live line with elapsed time on a terminal, plain lines elsewhere
(CI logs), so long steps (prepare, ALTER, measured runs) never look hung."""

from __future__ import annotations

import time
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn


class Progress:
    def __init__(self, console: Console | None = None, quiet: bool = False):
        self.console = console or Console(stderr=True, highlight=False)
        self.quiet = quiet
        self._live: RichProgress | None = None
        self._task: TaskID | None = None
        self._label = ""

    def info(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, markup=False, soft_wrap=True)

    @contextmanager
    def step(self, label: str):
        """Show `label` with a running clock; print its duration when done."""
        start = time.monotonic()
        self._label = label
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
