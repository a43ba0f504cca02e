"""Matrix axes: case expansion, ids, profile subsets, --case filters, sweeps, errors."""

from __future__ import annotations

import pytest

from perfci.model.scenario import cases, load_scenario, parse_scenario
from perfci.util.errors import BadInput

MATRIX = """\
name: m
description: matrix for tests
dataset: {rows: 100}
axes:
  - name: layout
    variants:
      plain: {dataset: {row_format: DYNAMIC}, vars: {to: ROW_FORMAT=COMPACT}}
      packed: {dataset: {row_format: COMPRESSED, key_block_size: 8}, vars: {to: ROW_FORMAT=DYNAMIC}}
  - name: cb
    option: innodb_change_buffering
    values: [all, none]
workload: {thread_sweep: [1, 2]}
steps:
  - {kind: prepare}
  - {kind: sql, name: convert, statements: ["ALTER TABLE {table} {to}"]}
  - {kind: measure, phase: rw, workload: oltp_read_write, threads: sweep}
profiles:
  smoke: {expected_minutes: 1, axes: {cb: [none]}, workload: {thread_sweep: [4]}}
  nightly: {expected_minutes: 1}
  seed: {expected_minutes: 1}
"""


def _scenario(text: str = MATRIX):
    return parse_scenario(text, "m.yaml")


def test_cases_are_the_product_of_axes_with_readable_ids():
    got = cases(_scenario(), "nightly")
    assert [c.case for c in got] == ["plain/cb=all", "plain/cb=none", "packed/cb=all", "packed/cb=none"]
    packed_none = got[3]
    assert packed_none.axes == {"layout": "packed", "cb": "none"}
    assert packed_none.dataset.row_format == "COMPRESSED" and packed_none.dataset.key_block_size == 8
    assert packed_none.config["innodb_change_buffering"] == "none"
    assert packed_none.axis_options == ["innodb_change_buffering"]
    assert packed_none.vars == {"to": "ROW_FORMAT=DYNAMIC"}
    assert len({c.content_hash() for c in got}) == 4  # each case is its own pinned thing


def test_profile_picks_axis_values_and_sweep_threads():
    got = cases(_scenario(), "smoke")
    assert [c.case for c in got] == ["plain/cb=none", "packed/cb=none"]
    phases = [s.phase for s in got[0].steps if s.kind == "measure"]
    assert phases == ["rw-t4"]
    assert [s.phase for s in cases(_scenario(), "nightly")[0].steps if s.kind == "measure"] == ["rw-t1", "rw-t2"]


def test_case_filter_globs_and_a_filter_matching_nothing_lists_cases():
    assert [c.case for c in cases(_scenario(), "nightly", only=["packed/*"])] == ["packed/cb=all", "packed/cb=none"]
    with pytest.raises(BadInput, match=r"matches no case .* cases: plain/cb=all, plain/cb=none"):
        cases(_scenario(), "nightly", only=["nope*"])


def test_scenario_without_axes_has_one_default_case():
    scenario, path = load_scenario("rebuild-after-delete")
    (only,) = cases(scenario, "smoke", str(path))
    assert only.case == "default" and only.axes == {}


@pytest.mark.parametrize("fragment, message", [
    ("  smoke: {expected_minutes: 1, axes: {cb: [some]}}",
     "m.yaml: field (top level): profiles.smoke.axes.cb: unknown value 'some'; allowed: all, none"),
    ("  smoke: {expected_minutes: 1, axes: {nope: [all]}}",
     "m.yaml: field (top level): profiles.smoke.axes: unknown axis 'nope'; axes: layout, cb"),
])
def test_profile_axis_errors_name_the_field_and_allowed_values(fragment, message):
    text = MATRIX.replace("  smoke: {expected_minutes: 1, axes: {cb: [none]}, workload: {thread_sweep: [4]}}", fragment)
    with pytest.raises(BadInput) as exc:
        _scenario(text)
    assert str(exc.value) == message


def test_axis_needs_one_form_and_unknown_variant_key_lists_allowed():
    with pytest.raises(BadInput, match="axis cb: `values` needs `option`"):
        _scenario(MATRIX.replace("    option: innodb_change_buffering\n", ""))
    with pytest.raises(BadInput, match=r"axes\[0\]\.variants\.plain\.colour: unknown key; allowed: description, "
                                       r"dataset, config, workload, vars"):
        _scenario(MATRIX.replace("plain: {dataset:", "plain: {colour: red, dataset:"))


def test_invalid_combination_names_the_case():
    text = MATRIX.replace("plain: {dataset: {row_format: DYNAMIC}", "plain: {dataset: {key_block_size: 4}")
    message = r"^m.yaml: case plain/cb=all: dataset: key_block_size is allowed only with row_format: COMPRESSED$"
    with pytest.raises(BadInput, match=message):
        cases(_scenario(text), "nightly", "m.yaml")


def test_pinned_matrix_scenarios_have_the_seed_cases():
    cb, path = load_scenario("change-buffer-matrix")
    ids = [c.case for c in cases(cb, "nightly", str(path))]
    assert len(ids) == 12 and "cx_full/change_buffering=inserts" in ids
    rf, path = load_scenario("row-format-compression")
    formats = {c.axes["format"]: (c.dataset.row_format, c.dataset.key_block_size) for c in cases(rf, "seed", str(path))}
    assert formats == {"compact": ("COMPACT", None), "dynamic": ("DYNAMIC", None), "compressed_16": ("COMPRESSED", 16),
                       "compressed_8": ("COMPRESSED", 8), "compressed_4": ("COMPRESSED", 4),
                       "compressed_2": ("COMPRESSED", 2)}
    seed_cb = cases(cb, "seed", str(path))[0]
    assert (seed_cb.dataset.tables, seed_cb.dataset.rows, seed_cb.workload.threads, seed_cb.workload.time) == \
        (16, 16_000_000, 32, 7200)


ONE_PER_CASE = """\
name: mb
description: one microbenchmark per case
dataset: {rows: 100}
axes:
  - name: bench
    variants:
      point: {phases: [point]}
      scan: {phases: [scan]}
      both: {}
steps:
  - {kind: prepare}
  - {kind: measure, phase: point, workload: oltp_point_select}
  - {kind: measure, phase: scan, workload: oltp_read_only}
headline:
  - {metric: qps, numerator: scan, denominator: point}
profiles:
  smoke: {expected_minutes: 1}
  nightly: {expected_minutes: 1}
  seed: {expected_minutes: 1}
"""


def test_a_variant_naming_phases_makes_a_case_of_each_microbenchmark():
    got = {c.case: c for c in cases(parse_scenario(ONE_PER_CASE, "mb.yaml"), "smoke")}
    assert [[s.kind + (f":{s.phase}" if s.kind == "measure" else "") for s in c.steps] for c in got.values()] == [
        ["prepare", "measure:point"], ["prepare", "measure:scan"], ["prepare", "measure:point", "measure:scan"]]
    assert got["point"].headline == [] and len(got["both"].headline) == 1  # a ratio needs both of its phases
    assert len({c.content_hash() for c in got.values()}) == 3
    with pytest.raises(BadInput) as bad:
        parse_scenario(ONE_PER_CASE.replace("phases: [scan]", "phases: [scna]"), "mb.yaml")
    assert str(bad.value) == ("mb.yaml: field (top level): axes.bench.variants.scan.phases: 'scna' is not a measure "
                              "step; phases: point, scan")
