"""judge/profile_diff.py: folding, per-transaction normalisation, and the noise
threshold, on small hand-made profiles and on the kept A/A explain pass of
docs/findings/data/2026-11-26-explain/aa (real perf profiles of two mariadbd 10.11
servers running the same work)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from perfci.judge.profile_diff import (
    SHARE_FLOOR,
    Change,
    call_paths,
    digest_changes,
    explain_findings,
    function_changes,
    per_function,
    symbol_coverage,
    total_us,
    wait_changes,
)
from perfci.model.explain import DigestRow, ExplainRun, parse_folded
from perfci.store.explain_files import read_explain

KEPT = Path(__file__).resolve().parents[2] / "docs" / "findings" / "data" / "2026-11-26-explain"


def test_folded_lines_parse_with_spaces_in_frames_and_repeated_stacks_summed():
    text = ("mariadbd;start_thread;do_command;operator new(unsigned long) 300\n"
            "mariadbd;start_thread;do_command;operator new(unsigned long) 200\n"
            "not a folded line\n\n"
            "mariadbd;start_thread;[mariadbd] 100\n")
    assert parse_folded(text) == {"mariadbd;start_thread;do_command;operator new(unsigned long)": 500,
                                  "mariadbd;start_thread;[mariadbd]": 100}


def test_self_and_inclusive_time_per_transaction_count_a_recursive_frame_once():
    folded = {"mariadbd;do_command;sp_head::execute;sp_head::execute;my_md5": 4_000_000,  # 4 ms
              "mariadbd;do_command;row_search": 2_000_000,
              "mariadbd;do_command;[mariadbd]": 1_000_000}
    own, incl = per_function(folded, transactions=100)
    # µs per transaction; the unnamed [mariadbd] leaf is its named caller's self time
    assert own == {"my_md5": 40.0, "row_search": 20.0, "do_command": 10.0}
    assert incl["sp_head::execute"] == 40.0 and incl["do_command"] == 70.0
    assert "[mariadbd]" not in incl and total_us(folded, 100) == 70.0


def test_symbol_coverage_counts_the_servers_own_frames_not_library_placeholders_or_the_kernel():
    named = {"mariadbd;start_thread;do_command;row_search;[libz.so.1.2.13];entry_SYSCALL_64_[k]": 10}
    stripped = {"mysqld;start_thread;[mysqld];[mysqld];[mysqld];[mysqld];__libc_send": 10}
    assert symbol_coverage(named) == 1.0
    assert symbol_coverage(stripped) == pytest.approx(2 / 6)
    assert symbol_coverage({"mysqld;0x7f00aa;0x7f00bb": 5}) == 0.0


def noisy_bursts(rng: random.Random, functions: dict[str, float], n: int = 4, txns: int = 250) -> list:
    """n bursts of a profile whose functions cost `functions` µs/txn, with the
    burst-to-burst spread of sampling (Poisson on ~1 ms samples) and a 5 % drift."""
    bursts = []
    for _ in range(n):
        drift = rng.gauss(1, 0.05)
        folded = {}
        for name, us in functions.items():
            samples = max(0, round(rng.gauss(us * txns / 1000, (us * txns / 1000) ** 0.5) * drift))
            folded[f"mariadbd;start_thread;do_command;{name}"] = samples * 1_000_000
        bursts.append((folded, txns))
    return bursts


SERVER = {"row_search": 800.0, "page_compress": 1200.0, "log_write": 300.0, "btr_cur_search": 500.0,
          "mutex_enter": 60.0, "net_write": 140.0}


def test_an_aa_of_synthetic_profiles_shows_nothing_and_a_planted_function_stands_out():
    rng = random.Random(7)
    false = sum(any(r.stands_out for r in function_changes(noisy_bursts(rng, SERVER), noisy_bursts(rng, SERVER)))
                for _ in range(40))
    assert false <= 2  # BH at 5 % per A/A, over a handful of functions
    planted = function_changes(noisy_bursts(rng, SERVER), noisy_bursts(rng, {**SERVER, "Item_func_md5": 150.0}))
    assert [r.name for r in planted if r.stands_out][:2] == ["Item_func_md5", "Item_func_md5"]  # self and inclusive


def test_a_change_below_the_share_floor_does_not_stand_out_however_significant():
    a = [({"p;f": 1_000_000_000, "p;g": 5_000_000}, 1000)] * 4           # g: 5 µs/txn of 1005
    b = [({"p;f": 1_000_000_000, "p;g": 9_000_000}, 1000)] * 4           # +4 µs/txn: < 1 % of A's CPU
    rows = {(r.name, r.kind): r for r in function_changes(a, b)}
    assert rows[("g", "self")].p == 0.0 and not rows[("g", "self")].stands_out


def test_digests_match_by_text_across_releases_and_rows_per_call_is_work():
    def burst(examined: int, latency_ps: int, digest: str) -> list[DigestRow]:
        return [DigestRow(digest=digest, text="SELECT `c` FROM `sbtest1` WHERE `id` = ?", calls=100,
                          latency_ps=latency_ps, rows_examined=examined, rows_sent=100)]
    a = [burst(100, 5_000_000_000 + k * 40_000_000, "aaa") for k in range(4)]
    b = [burst(200, 5_000_000_000 + k * 50_000_000, "bbb") for k in range(4)]  # other hash, same statement
    rows = digest_changes(a, b)
    out = {r.kind for r in rows if r.stands_out}
    assert out == {"rows examined/call"}  # twice the rows; the latency within its noise


def test_waits_are_judged_per_transaction_against_a_share_of_the_transaction_time():
    a = [({"wait/io/file/innodb/innodb_log_file": 100_000_000 * (10 + k)}, 100, 1.0) for k in range(4)]
    b = [({"wait/io/file/innodb/innodb_log_file": 100_000_000 * (900 + k * 3)}, 100, 1.0) for k in range(4)]
    rows = wait_changes(a, b)
    assert rows[0].name == "wait/io/file/innodb/innodb_log_file" and rows[0].stands_out
    assert rows[0].a == pytest.approx(11.5) and rows[0].unit == "µs/txn"  # 1.15e9 ps over 100 txns


@pytest.fixture(scope="module")
def kept_aa() -> tuple[ExplainRun, dict]:
    return read_explain(KEPT / "aa")


def test_the_kept_aa_explain_pass_shows_nothing_beyond_its_noise(kept_aa):
    run, folded = kept_aa
    findings = explain_findings(run, folded)
    assert [f.phase for f in findings] == ["before", "after"]
    assert all(f.profiled and f.symbols for f in findings)
    assert [r for f in findings for r in f.standing_out()] == []
    for f in findings:  # what an A/A differs by: the largest change of a tested function is within a few floors
        tested = [r for r in f.functions if r.kind == "self"]
        assert max(abs(r.delta) for r in tested) < 10 * SHARE_FLOOR * f.cpu_us["a"]


def test_a_cost_planted_into_the_kept_aas_b_bursts_stands_out(kept_aa):
    """A 3 %-of-CPU function added to B's real profiles (with the bursts' own 10 % spread)."""
    run, folded = kept_aa
    rng = random.Random(3)
    planted = dict(folded)
    for burst in run.of("after", "b"):
        extra = 0.03 * sum(folded[burst.profile].values()) * rng.uniform(0.9, 1.1)
        planted[burst.profile] = {**folded[burst.profile],
                                  "mariadbd;start_thread;do_command;sp_head::execute_trigger;my_md5": int(extra)}
    after = next(f for f in explain_findings(run, planted) if f.phase == "after")
    assert {r.name for r in after.standing_out()} >= {"my_md5", "sp_head::execute_trigger"}


def test_the_kept_trigger_explain_pass_names_the_trigger_path_in_both_phases():
    """The detection benchmark's known cost (a BEFORE UPDATE trigger burning MD5 per
    row on B, ~5-8 % of throughput): the trigger's execution path is what grew."""
    run, folded = read_explain(KEPT / "trigger")
    for f in explain_findings(run, folded):
        grown = {r.name for r in f.standing_out() if r.delta > 0}
        assert {"sp_head::execute_trigger", "Table_triggers_list::process_triggers"} <= grown, (f.phase, grown)
        assert not [r for r in f.standing_out() if r.delta < 0 and "trigger" in r.name]


def test_a_change_passed_down_a_call_chain_is_one_path_from_where_it_enters_to_how_deep_it_goes():
    def row(name: str, a: float, b: float) -> Change:
        return Change(name, "inclusive", a, b, "µs/txn", 0.001, 0.001, True)
    rows = [row("start_thread", 1000, 1100), row("do_command", 900, 1000), row("execute_trigger", 5, 104),
            row("my_md5", 0, 97), row("row_search", 300, 200)]
    stacks = ["p;start_thread;do_command;execute_trigger;my_md5;[libcrypto.so.3]",
              "p;start_thread;do_command;row_search", "p;start_thread;do_command"]
    paths = {p.name: (p.top.name, p.bottom.name, p.frames) for p in call_paths(rows, stacks)}
    # +100 from the thread's start down to MD5 is one change; the opposite one in row_search is its own
    assert paths == {"start_thread → … → my_md5": ("start_thread", "my_md5", 4),
                     "row_search": ("row_search", "row_search", 1)}
