"""The cancel contract (actions/runner: SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after):
the first signal starts the clean-up; a second one must not cut it short."""

from __future__ import annotations

import os
import signal

import pytest

from perfci.sessions.session import handle_cancellation


@pytest.fixture
def restored_handlers():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_first_signal_interrupts_and_later_ones_are_ignored_with_a_line(first, restored_handlers, capsys):
    handle_cancellation()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), first)
        signal.sigtimedwait([], 0)  # a point where the handler runs, if it has not yet
    for later in (signal.SIGTERM, signal.SIGINT):
        os.kill(os.getpid(), later)  # inside the clean-up: must not raise
    assert capsys.readouterr().err.splitlines() == ["perfci: SIGTERM ignored: already stopping",
                                                    "perfci: SIGINT ignored: already stopping"]
