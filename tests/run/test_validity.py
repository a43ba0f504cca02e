"""The run validity gate on phases whose numbers are known."""

from __future__ import annotations

from perfci.run.validity import assess, phase_problems
from perfci.store.results import parse_result

from factories import edited, make_result


def phase_with(intervals: list[float], **changes):
    data = edited(make_result(intervals=len(intervals)))
    phase = data["phases"]["before"]
    for iv, tps in zip(phase["intervals"], intervals):
        iv["tps"] = tps
    phase.update(changes)
    return parse_result(data, "test").phases["before"]


def test_a_collapse_at_the_end_of_a_long_phase_makes_the_run_invalid():
    collapsing = [200.0] * 30 + [200 - 5 * i for i in range(30)]  # 60 s, the second half falls to a quarter
    [problem] = phase_problems("before", phase_with(collapsing))
    assert problem.startswith("phase before: not steady: tps changed -")
    assert phase_problems("before", phase_with([200.0 + (i % 3) for i in range(60)])) == []


def test_a_short_phase_is_not_judged_by_its_trend():
    # a 15 s phase with a flush stall in its last seconds (seen: -55 %)
    assert phase_problems("before", phase_with([200.0] * 11 + [150, 100, 60, 40])) == []


def test_a_fixed_work_phase_is_judged_by_its_work_not_its_trend():
    """The same work each run: a stall at its end is part of its time (seen in CI: the
    smoke profile's 3000 transactions over 40 s, -62 % in the second half)."""
    collapsing = [200.0] * 30 + [200 - 5 * i for i in range(30)]
    assert phase_problems("before", phase_with(collapsing, bound="time"))
    assert phase_problems("before", phase_with(collapsing, bound="transactions", transactions_target=100)) == []


def test_cap_busy_host_and_errors_are_each_a_reason():
    phase = phase_with([200.0] * 10, bound="transactions", transactions_target=10**9,
                       host_cpu={"others": 0.6, "server": 1.0})
    reasons = phase_problems("before", phase)
    assert any("cap ended it" in r for r in reasons) and any("host busy: other processes used 0.60" in r for r in reasons)
    result = make_result()
    assert assess(result).valid and assess(result).reasons == []


def test_a_busy_host_does_not_make_a_counted_run_invalid():
    """The count does not see the host (the A/B keeps counted bursts on a busy host too):
    a counted run on a busy runner is valid, a timed one is not."""
    busy = phase_with([200.0] * 10, host_cpu={"others": 0.9, "server": 1.0})
    assert phase_problems("before", busy) and phase_problems("before", busy, counted=True) == []
    data = edited(make_result(), measure="work")
    data["phases"]["before"]["host_cpu"] = {"others": 0.9, "server": 1.0}
    assert assess(parse_result(data, "test")).valid
    data["measure"] = "time"
    assert not assess(parse_result(data, "test")).valid
