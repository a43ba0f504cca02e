"""Scenario files: the pinned ones validate; bad ones give one clear line naming
the file, the field and what is allowed."""

import pytest

from perfci.model.scenario import all_scenario_files, load_scenario, parse_scenario, resolve
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
