"""A counted server's two launches on one datadir: natively for everything that is not
measured (loading, a rebuild: under callgrind one ALTER TABLE of a smoke table took 4
minutes), under its work counter for the measured phases only. The PMU counts the
native process itself: nothing restarts then.

`perfci run --measure work` (run/execute.py, through StepContext.counting) and the
A/B's counted sides (sessions/interleave.py) restart through `relaunch`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from perfci.model.result import ConfigValue
from perfci.providers.local import LocalServer
from perfci.providers.provider import ServerProvider
from perfci.run import work
from perfci.util.progress import Progress


def relaunch(server: LocalServer, launcher: list[str], config: dict[str, ConfigValue], progress: Progress,
             label: str) -> None:
    """Stop the server and start it again on the same datadir behind `launcher` (its
    counter, or none: native)."""
    with progress.step(label):
        server.stop()
        server.launcher = launcher
        server.start(config)


@dataclass
class CountedLaunches:
    """Which launch a counted run's server is in, and its counter while it counts.
    `reconnect`: what a restart needs afterwards (the inspector's setup)."""

    setup: work.WorkSetup
    server: ServerProvider
    config: dict[str, ConfigValue]
    progress: Progress
    reconnect: Callable[[], None]
    counted: list[str] = field(init=False)  # the counter's launcher (empty: the PMU, no restart)
    counter: work.WorkCounter | None = None

    def __post_init__(self) -> None:
        self.counted = list(self.setup.launcher)

    def start_natively(self) -> None:
        """Before the first start: the dataset is loaded (or restored) natively."""
        if isinstance(self.server, LocalServer):
            self.server.launcher = []

    def for_step(self, measured: bool, name: str) -> None:
        """Before a step: a measured phase runs under the counter, anything else natively."""
        server = self.server
        if self.counted and isinstance(server, LocalServer):
            want = self.counted if measured else []
            if server.launcher != want:
                how = "under its work counter" if measured else f"natively for {name}"
                relaunch(server, want, self.config, self.progress, f"restart server {how}")
                self.reconnect()
                self.counter = None
        if measured and self.counter is None:
            self.counter = work.counter_for(self.setup, server)
