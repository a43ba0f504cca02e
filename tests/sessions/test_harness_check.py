"""`perfci harness-check`: base perfci (A) against head perfci (B), rounds of one
scenario on one server: the same work per transaction in every round's pair and no
judged metric moved, or the harness changed what it measures (exit 1)."""

from __future__ import annotations

import json

import pytest

from perfci.model.result import Result
from perfci.sessions.harness import check, harness_markdown, pair_rounds
from perfci.util.errors import BadInput

from conftest import run_perfci
from factories import make_result, write_results


def run(tps: float = 1000.0, writes: float = 2.0, sha: str = "aaaa", minute: int = 0) -> Result:
    data = json.loads(json.dumps(make_result(tps=tps).dump()))
    data["harness"]["git_sha"] = sha
    data["finished_at"] = f"2026-11-25T10:{minute:02d}:00+00:00"
    for body in data["phases"].values():
        events = body["metrics"]["events"] = body["metrics"]["transactions"] = 30000  # fixed work
        body["counters"]["global_status"].update({"Com_insert": events, "Handler_write": round(events * writes),
                                                  "Com_show_status": 3})
    return Result.model_validate(data)


def rounds(n: int, **b) -> tuple[list[Result], list[Result]]:
    """n rounds in the order they ran: A B, B A, ..."""
    a = [run(tps=1000 + 10 * i, minute=2 * i) for i in range(n)]
    return a, [run(**{"tps": 1000 + 10 * i, **b}, sha="bbbb", minute=2 * i + 1) for i in range(n)]


def test_the_same_work_and_throughput_is_an_unchanged_harness():
    a, b = rounds(3)
    [(case, (ra, rb))] = pair_rounds(a, b).items()
    c = check(case, ra, rb)
    assert not c.changed and c.compared == 4  # Com_insert and Handler_write per phase; status reads left out
    text = harness_markdown([c], a, b)
    assert text.splitlines()[2].startswith("**Harness unchanged**: the same work in every round (4 Com_/Handler_")
    assert "A: perfci `aaaa` · B: perfci `bbbb`" in text


def test_more_row_work_per_transaction_is_a_changed_harness_naming_the_counter():
    a, b = rounds(2, writes=2.1)  # two rounds: the work is compared, throughput is not judged
    c = check("default", a, b)
    assert c.changed and {d.key for d in c.differences} == {"before.global_status.Handler_write",
                                                           "after.global_status.Handler_write"}
    assert "**The harness changed what it measures**: `default` did different work" in harness_markdown([c], a, b)


def test_throughput_that_moved_in_every_round_is_a_changed_harness():
    a, _ = rounds(3)
    b = [run(tps=r.phases["before"].metrics.tps * 0.7, sha="bbbb", minute=2 * i + 1) for i, r in enumerate(a)]
    c = check("default", a, b)
    assert not c.differences and {r.key for r in c.moved} >= {"before.tps", "after.tps"}
    assert "`default` `before.tps` regression" in harness_markdown([c], a, b)


def test_unequal_rounds_or_other_scenarios_are_bad_input():
    a, b = rounds(2)
    with pytest.raises(BadInput, match="2 run\\(s\\) of A and 1 of B"):
        pair_rounds(a, b[:1])
    other = json.loads(json.dumps(b[0].dump()))
    other["scenario"]["name"] = "other"
    with pytest.raises(BadInput, match="different scenarios"):
        pair_rounds(a, [Result.model_validate(other), b[1]])


@pytest.mark.slow
def test_the_cli_exits_1_on_a_changed_harness_and_writes_the_report(tmp_path):
    a, b = rounds(3, writes=3.0)
    write_results(tmp_path / "a", a)
    write_results(tmp_path / "b", b)
    done = run_perfci("harness-check", str(tmp_path / "a"), str(tmp_path / "b"), "--report", str(tmp_path / "h.md"))
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "h.md").read_text().startswith("## perfci harness check: tiny")
    same = run_perfci("harness-check", str(tmp_path / "a"), str(tmp_path / "a"))
    assert same.returncode == 0, same.stdout


def test_a_time_boxed_phase_is_named_and_its_work_not_compared():
    a, _ = rounds(2)
    b = []
    for i in range(2):  # B's phases ended on time with fewer transactions
        data = json.loads(json.dumps(run(writes=3.0, sha="bbbb", minute=2 * i + 1).dump()))
        for body in data["phases"].values():
            body["metrics"]["transactions"] = body["metrics"]["events"] = 29000
        b.append(Result.model_validate(data))
    c = check("default", a, b)
    assert c.time_boxed == ["after", "before"] and not c.differences and c.compared == 0
    assert "work not compared: `after`, `before`" in harness_markdown([c], a, b)


def test_two_rounds_compare_the_work_but_do_not_judge_throughput():
    a, _ = rounds(2)
    b = [run(tps=r.phases["before"].metrics.tps * 0.7, sha="bbbb", minute=2 * i + 1) for i, r in enumerate(a)]
    c = check("default", a, b)
    assert not c.changed and not c.moved and c.compared == 4
    assert "throughput not judged (2 rounds; 3 or more needed)" in harness_markdown([c], a, b)
