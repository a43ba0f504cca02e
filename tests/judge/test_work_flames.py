"""Flame graphs estimated from callgrind's call graph (judge/work_profile.py
`estimated_stacks`): what the estimate keeps exactly, and the case built to break its
assumption (a function doing different work for different callers)."""

from __future__ import annotations

import pytest

from perfci.judge.work_profile import MIN_SHARE, THINNER, estimated_stacks


def self_widths(stacks: dict[str, float]) -> dict[str, float]:
    """Each function's own total as a flame graph draws it: the sum of the self widths of
    the frames it is the leaf of."""
    out: dict[str, float] = {}
    for stack, value in stacks.items():
        leaf = stack.rsplit(";", 1)[-1]
        out[leaf] = out.get(leaf, 0.0) + value
    return out


# do_command -> dispatch -> {parse, execute}; execute -> {read_row, write_log}; parse -> alloc;
# execute -> alloc: a shared leaf under two callers
OWN = {"do_command": 10.0, "dispatch": 20.0, "parse": 100.0, "execute": 50.0, "read_row": 400.0,
       "write_log": 80.0, "alloc": 60.0}
CALLS = [("do_command", "dispatch", 710.0), ("dispatch", "parse", 120.0), ("dispatch", "execute", 570.0),
         ("parse", "alloc", 20.0), ("execute", "alloc", 40.0), ("execute", "read_row", 400.0),
         ("execute", "write_log", 80.0)]


def test_each_functions_own_total_and_the_roots_total_are_kept_exactly():
    stacks = estimated_stacks(OWN, CALLS)
    assert self_widths(stacks) == pytest.approx(OWN)
    assert sum(stacks.values()) == pytest.approx(sum(OWN.values()))
    assert all(s.startswith("do_command") for s in stacks)
    # the shared leaf under each caller, in proportion to the edges (exact here: one edge each)
    assert stacks["do_command;dispatch;parse;alloc"] == pytest.approx(20.0)
    assert stacks["do_command;dispatch;execute;alloc"] == pytest.approx(40.0)


def test_a_function_doing_other_work_for_other_callers_is_split_in_proportion_as_labelled():
    """Built to break the assumption: `lookup` scans (2000 instructions) when `select`
    calls it and reads one cached row (20) when `update` calls it, as often. The true
    stacks are select;lookup;scan and update;lookup;cache; the estimate splits lookup's
    callees over both callers in proportion to the edges (what the graphs' subtitle says).
    Exact still: every function's own total, and each caller's inclusive width."""
    own = {"root": 0.0, "select": 1.0, "update": 1.0, "lookup": 30.0, "scan": 2000.0, "cache": 200.0}
    calls = [("root", "select", 2016.0), ("root", "update", 216.0), ("select", "lookup", 2015.0),
             ("update", "lookup", 215.0), ("lookup", "scan", 2000.0), ("lookup", "cache", 200.0)]
    stacks = estimated_stacks(own, calls)
    assert self_widths(stacks) == pytest.approx({k: v for k, v in own.items() if v})
    width = {caller: sum(v for s, v in stacks.items() if s.startswith(f"root;{caller}")) for caller in ("select", "update")}
    assert width == pytest.approx({"select": 2016.0, "update": 216.0})
    # the error the assumption makes: the scan shows under update too, the cached read under select
    share = 2015.0 / 2230.0
    assert stacks["root;select;lookup;scan"] == pytest.approx(2000.0 * share)
    assert stacks["root;update;lookup;scan"] == pytest.approx(2000.0 * (1 - share))  # truly 0
    assert stacks["root;select;lookup;cache"] == pytest.approx(200.0 * share)  # truly 0


def test_edges_left_out_leave_a_thinner_frame_never_a_stretched_one():
    """The bursts file keeps edges above a floor: a frame's width stays what its callers
    passed it, and what its kept edges do not explain is `[thinner paths]`."""
    own = {"root": 0.0, "f": 10.0, "g": 50.0}
    stacks = estimated_stacks(own, [("root", "f", 100.0), ("f", "g", 50.0)])  # f's edge to a thin h not kept
    assert stacks == pytest.approx({"root;f": 10.0, "root;f;g": 50.0, f"root;f;{THINNER}": 40.0})


def test_recursion_keeps_its_cost_and_thin_paths_are_one_frame():
    own = {"root": 1.0, "walk": 10.0, "leaf": 5.0}
    calls = [("root", "walk", 30.0), ("walk", "leaf", 15.0), ("walk", "walk", 99.0), ("leaf", "walk", 5.0)]
    stacks = estimated_stacks(own, calls)
    assert sum(stacks.values()) == pytest.approx(31.0)  # the root's inclusive: nothing lost, nothing counted twice
    wide = {"root": 0.0, "big": 1.0, "tiny": 1.0}
    thin = estimated_stacks(wide, [("root", "big", 1 / MIN_SHARE), ("root", "tiny", 0.5)])
    assert thin[f"root;{THINNER}"] == pytest.approx(0.5) and "root;tiny" not in thin
