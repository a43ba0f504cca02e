"""util/progress.py: a planned run says how far it is and the time left — in a CI log
(no terminal) as a plain line at most once a minute, on a terminal as a bar."""

from __future__ import annotations

import io

from rich.console import Console

from perfci.util.progress import Progress, time_left


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_time_left_is_the_pace_so_far_times_the_units_left():
    assert time_left(60, 3, 9) == "~2 min left"      # 20 s a unit, 6 to go
    assert time_left(10, 5, 10) == "~10 s left"
    assert time_left(10, 0, 10) == "" and time_left(10, 10, 10) == ""


def test_a_ci_log_gets_a_line_a_minute_with_where_the_run_is_and_the_time_left():
    out, clock = io.StringIO(), Clock()
    progress = Progress(Console(file=out, force_terminal=False, width=200), clock=clock)
    progress.plan(90)
    for k in range(1, 91):
        clock.now += 20  # a burst every 20 s: a line every third burst
        progress.advance(f"instance pair 1 of 9 · before: burst {k}/90 on A")
    lines = out.getvalue().splitlines()
    assert lines[0] == "  instance pair 1 of 9 · before: burst 3/90 on A · 3% · ~29 min left"
    assert len(lines) == 30 and lines[-1].endswith("burst 90/90 on A · 100%")  # and the last one


def test_quiet_prints_nothing_and_a_terminal_gets_a_transient_bar():
    out = io.StringIO()
    quiet = Progress(Console(file=out, force_terminal=False), quiet=True)
    quiet.plan(3)
    for _ in range(3):
        quiet.advance("x")
    assert out.getvalue() == ""
    term = io.StringIO()
    progress = Progress(Console(file=term, force_terminal=True, width=120), clock=Clock())
    progress.plan(4)
    progress.advance("instance pair 1 of 2 · only: burst 1/2 on A")
    progress.finish()
    assert "instance pair 1 of 2" in term.getvalue()


def test_a_workflow_step_gets_plain_lines_even_on_a_pseudo_terminal(monkeypatch):
    """#57: under act the bench step's log was full of the spinner's escape codes (act
    gives steps a pseudo-terminal); in CI the console is never a terminal."""
    from perfci.util.progress import Progress, in_ci
    assert in_ci({"GITHUB_ACTIONS": "true"}) and in_ci({"ACT": "true"}) and in_ci({"CI": "1"})
    assert not in_ci({}) and not in_ci({"CI": "false"})
    import os
    import sys
    _, tty = os.openpty()  # stderr on a pseudo-terminal, as act gives a step
    monkeypatch.setattr(sys, "stderr", os.fdopen(tty, "w"))
    for name in ("GITHUB_ACTIONS", "ACT", "CI", "FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert Progress().console.is_terminal  # a person's terminal: the live line
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert not Progress().console.is_terminal  # removed once: True
