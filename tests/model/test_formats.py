"""The one versioned loader (model/formats.py), through the real formats."""

import json

import pytest

from perfci.model.baseline import BASELINE_FILE
from perfci.model.bursts import BURSTS_FILE
from perfci.model.confirmation import CONFIRMATION_FILE
from perfci.model.history import HISTORY_LINE
from perfci.model.noise import NOISE_FILE
from perfci.report.comparison import COMPARISON_FILE
from perfci.store.history_files import read_history
from perfci.store.results import RESULT_FILE
from perfci.util.errors import BadInput

from conftest import REPO

ALL = [RESULT_FILE, BASELINE_FILE, HISTORY_LINE, COMPARISON_FILE, NOISE_FILE, BURSTS_FILE, CONFIRMATION_FILE]


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.kind)
def test_a_file_from_a_newer_perfci_is_refused_naming_both_versions(tmp_path, fmt):
    family, version = fmt.current.rsplit("/", 1)
    newer = f"{family}/{int(version) + 1}"
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"schema": newer}))
    with pytest.raises(BadInput, match=rf"^{path}: written by a newer perfci \({newer}\); this perfci reads .*{fmt.current}"):
        fmt.load(path)


@pytest.mark.parametrize("fmt", ALL, ids=lambda f: f.kind)
def test_another_kind_not_json_and_missing_are_one_line_errors(tmp_path, fmt):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "perfci.somethingelse/1"}))
    with pytest.raises(BadInput, match=rf"not a perfci {fmt.kind} \(schema 'perfci.somethingelse/1'"):
        fmt.load(other)
    torn = tmp_path / "torn.json"
    torn.write_text('{"schema": ')
    with pytest.raises(BadInput, match=rf"^{torn}: corrupt {fmt.kind} \(not JSON"):
        fmt.load(torn)
    with pytest.raises(BadInput, match=rf"no such {fmt.kind} file"):
        fmt.load(tmp_path / "absent.json")


def test_an_older_history_line_is_upgraded_and_a_bad_field_names_file_line_and_field(tmp_path, capsys):
    path = tmp_path / "case.jsonl"
    v1 = {"result_id": "r1", "scenario_hash": "sha256:x", "metrics": {"before.tps": 1.0}}  # /1: no schema
    path.write_text(json.dumps(v1) + "\n" + json.dumps({**v1, "result_id": "r2", "metrics": "x"}) + "\n{")
    [record] = read_history(path)  # the damaged line and the torn last one are skipped, each said
    assert record.schema_ == "perfci.history/4" and record.valid and record.counters == {}
    warned = capsys.readouterr().err.splitlines()
    assert warned[0].startswith(f"perfci: warning: {path}:2: damaged line skipped ((corrupt history record): field metrics")
    assert warned[1].startswith(f"perfci: warning: {path}:3: damaged line skipped (corrupt history record (not JSON")
    path.write_text(json.dumps({**v1, "schema": "perfci.history/9"}) + "\n")  # newer: refused, not damage
    with pytest.raises(BadInput, match=r"written by a newer perfci \(perfci.history/9\)"):
        read_history(path)


def test_a_v2_history_line_keeps_its_worse_nights_out_of_the_baseline_as_standing(tmp_path):
    """/2 left every night worse beyond tolerance out of the baseline; read as /3 its
    `regressed` keys stand, so an old history gives the same baseline as before."""
    path = tmp_path / "case.jsonl"
    v2 = {"schema": "perfci.history/2", "result_id": "r1", "scenario_hash": "sha256:x", "metrics": {"before.tps": 1.0},
          "regressed": ["before.tps"], "judged_since": None}
    path.write_text(json.dumps(v2) + "\n")
    [record] = read_history(path)
    assert record.schema_ == "perfci.history/4" and record.standing == ["before.tps"] == record.regressed


def test_kept_raw_data_loads_gzipped_and_a_bad_gzip_is_one_line():
    """Every figure keeps its bursts files gzipped (docs/findings/data, benchmarks/results):
    they load as they are kept, and give what the plain file gives."""
    import gzip
    kept = sorted(REPO.glob("docs/findings/data/2026-11-26-calibrate-microbench/*.bursts.json.gz"))
    assert kept
    run = BURSTS_FILE.load(kept[0])
    assert run.dump() == BURSTS_FILE.parse_text(gzip.decompress(kept[0].read_bytes()).decode(), "plain").dump()


def test_a_file_named_gz_that_is_not_gzip_is_a_one_line_error(tmp_path):
    fake = tmp_path / "a.bursts.json.gz"
    fake.write_text("{}")
    with pytest.raises(BadInput, match=rf"^{fake}: not a gzipped perfci {BURSTS_FILE.kind} \(named .gz\)$"):
        BURSTS_FILE.load(fake)
