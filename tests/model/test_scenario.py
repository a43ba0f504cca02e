"""Scenario files: the pinned ones validate; bad ones give one clear line naming
the file, the field and what is allowed."""

import pytest

from perfci.model.scenario import MeasureStep, all_scenario_files, load_scenario, parse_scenario, resolve
from perfci.util.errors import BadInput

from conftest import TINY_SCENARIO, TINY_STEPS


def tiny_text(**kw):
    return TINY_SCENARIO.format(name=kw.get("name", "tiny"), steps=kw.get("steps", TINY_STEPS), time=2)


def error_of(text: str) -> str:
    with pytest.raises(BadInput) as exc:
        parse_scenario(text, "scenarios/x.yaml")
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_pinned_scenarios_validate_with_all_profiles():
    files = all_scenario_files()
    assert any(f.stem == "rebuild-after-delete" for f in files)
    for path in files:
        scenario, _ = load_scenario(str(path))
        hashes = {resolve(scenario, p).content_hash() for p in ("smoke", "nightly", "seed")}
        assert len(hashes) == 3  # profiles really change what runs


def test_rebuild_after_delete_follows_the_bug():
    scenario, _ = load_scenario("rebuild-after-delete")
    assert scenario.dataset.row_format == "COMPRESSED"
    assert [(i.name, i.columns) for i in scenario.dataset.indexes] == [
        ("idx_k_c", ["k", "c"]), ("idx_c_k", ["c", "k"]), ("idx_pad_k", ["pad", "k"])]
    assert [s.kind for s in scenario.steps] == ["prepare", "apply_layout", "delete_random", "measure", "sql", "measure"]
    before, after = scenario.steps[3], scenario.steps[5]
    assert before.options == after.options == {"skip_trx": True, "delete_inserts": 2, "index_updates": 5,
                                               "db-ps-mode": "disable", "rate": 0}
    assert scenario.steps[4].statements == ["ALTER TABLE {table} ENGINE=InnoDB"]
    smoke = resolve(scenario, "smoke")
    assert smoke.dataset.rows == 200_000 and smoke.expected_minutes <= 3
    # smoke is fixed work (seeded, 3000 transactions, a 300 s cap), in bursts of 250 for an interleaved A/B
    assert (smoke.workload.transactions, smoke.workload.time, smoke.workload.bursts()) == (3000, 300, (250, 12))
    assert resolve(scenario, "nightly").workload.transactions is None  # nightly stays time-boxed (10 min)
    assert resolve(scenario, "seed").dataset.rows == 10_000_000


def test_unknown_key_names_field_and_allowed_keys():
    msg = error_of(tiny_text().replace("  rows: 2000", "  rows: 2000\n  colour: blue"))
    assert msg.startswith("scenarios/x.yaml: field dataset.colour: unknown key; allowed: tables, rows,")


def test_unknown_key_inside_a_step():
    msg = error_of(tiny_text(steps=TINY_STEPS + "    thread: 4\n"))
    assert "field steps[2].measure.thread: unknown key; allowed: kind, phase, workload, threads, time, transactions, options" in msg


def test_wrong_type():
    msg = error_of(tiny_text().replace("rows: 2000", "rows: many"))
    assert "field dataset.rows:" in msg and "integer" in msg and "'many'" in msg


def test_unknown_step_kind_lists_allowed_kinds():
    msg = error_of(tiny_text(steps="  - kind: sleep\n"))
    assert "field steps[0]: unknown step kind 'sleep'; allowed: prepare, apply_layout, delete_random, sql, measure" in msg


def test_missing_profile_and_bad_key_block_size():
    assert "missing: seed" in error_of(tiny_text().replace("  seed: {expected_minutes: 0.2}\n", ""))
    msg = error_of(tiny_text().replace("row_format: COMPRESSED", "row_format: DYNAMIC\n  key_block_size: 8"))
    assert "key_block_size is allowed only with row_format: COMPRESSED" in msg


def test_yaml_syntax_error_has_line_number():
    assert error_of("name: [unclosed\n").startswith("scenarios/x.yaml:2:1: not valid YAML")


def test_unknown_profile_lists_profiles():
    scenario = parse_scenario(tiny_text(), "x.yaml")
    with pytest.raises(BadInput, match=r"unknown profile 'huge'; allowed: smoke, nightly, seed"):
        resolve(scenario, "huge", "x.yaml")


def test_unknown_scenario_name():
    with pytest.raises(BadInput, match="unknown scenario 'nope'; known: .*rebuild-after-delete"):
        load_scenario("nope")


LUA = """lua:
  full_scan: |
    require("oltp_common")
    function event() con:query("SELECT COUNT(*) FROM sbtest1 WHERE LENGTH(c) < 0") end
"""


def test_a_measure_step_runs_sysbench_tests_or_the_scenarios_own_lua_and_nothing_else():
    steps = TINY_STEPS.replace("oltp_write_only", "full_scan")
    assert "is neither one of sysbench's tests" in error_of(tiny_text(steps=steps))
    assert "oltp_read_only" in error_of(tiny_text(steps=TINY_STEPS.replace("oltp_write_only", "oltp_writeonly")))
    scenario = parse_scenario(tiny_text(steps=steps) + LUA, "scenarios/x.yaml")
    assert scenario.steps[-1].workload == "full_scan"
    # a script may not take the name of one of sysbench's own tests: which one ran would be a guess
    msg = error_of(tiny_text() + LUA.replace("full_scan", "oltp_write_only"))
    assert "lua.oltp_write_only: is the name of one of sysbench's own tests" in msg


def test_the_scenarios_lua_is_part_of_what_ran_and_of_its_hash():
    text = tiny_text(steps=TINY_STEPS.replace("oltp_write_only", "full_scan")) + LUA
    one = resolve(parse_scenario(text, "x"), "smoke")
    other = resolve(parse_scenario(text.replace("LENGTH(c) < 0", "LENGTH(c) < 1"), "x"), "smoke")
    assert one.lua["full_scan"].startswith('require("oltp_common")')
    assert one.content_hash() != other.content_hash()
    # scenarios without Lua keep the hash they had (the field is left out when empty)
    plain = resolve(parse_scenario(tiny_text(), "x"), "smoke")
    assert "lua" not in plain.model_dump(exclude_defaults=True)


def test_microbench_runs_at_one_and_four_clients_and_has_a_full_scan_of_its_own():
    scenario, _ = load_scenario("microbench")
    smoke = resolve(scenario, "smoke")
    phases = {s.phase: s for s in smoke.steps if isinstance(s, MeasureStep)}
    scan = phases["full-scan"]
    assert scan.workload in smoke.lua and "sysbench.opt.tables" in smoke.lua[scan.workload]
    # the range the index does not cover keeps one plan: the index forced, a LIMIT instead of a dense BETWEEN
    assert "FORCE INDEX (k_%d)" in smoke.lua[phases["range-not-covered"].workload]
    four = {p: s for p, s in phases.items() if s.threads == 4}
    assert set(four) == {"point-query-t4", "update-index-t4", "read-only-t4", "read-write-t4", "insert-t4"}
    for name, step in four.items():  # the same work per client as the one-client phase
        one = phases[name.removesuffix("-t4")]
        assert step.workload == one.workload and step.transactions == 4 * (one.transactions or smoke.workload.transactions)
    assert list(phases)[-1] == "insert-t4"  # it grows the table: last
    # four clients can delete and re-insert one id: that phase restarts on a duplicate key
    assert "1062" in str(four["read-write-t4"].options["mysql-ignore-errors"]).split(",")


def test_only_phases_keeps_the_named_measure_phases_and_every_other_step():
    """`--phase` (ab, sweep, bisect): one kind of statement of a suite, measured, sized
    and judged alone; the data steps stay, a headline needing a dropped phase goes."""
    from perfci.model.scenario import cases, only_phases
    sc, path = load_scenario("microbench")
    [full] = cases(sc, "smoke", str(path))
    kept = only_phases(full, ("random-ranges", "full-scan"))
    assert [s.phase for s in kept.steps if isinstance(s, MeasureStep)] == ["random-ranges", "full-scan"]
    assert [s for s in kept.steps if not isinstance(s, MeasureStep)] == \
        [s for s in full.steps if not isinstance(s, MeasureStep)]
    assert kept.content_hash() != full.content_hash() and only_phases(full, ()) is full
    sc2, path2 = load_scenario("rebuild-after-delete")
    [r] = cases(sc2, "smoke", str(path2))
    assert r.headline and only_phases(r, ("before",)).headline == []  # after/before needs both
    with pytest.raises(BadInput, match=r"^--phase 'point-querry': not a measure phase of microbench at smoke; "
                                       r"phases: point-query, range-covered, "):
        only_phases(full, ("point-query", "point-querry"))
