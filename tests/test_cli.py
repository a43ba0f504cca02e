"""The command line's contract: exit codes, one-line errors, the schema, and
finding the project it runs in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from perfci import cli
from perfci.commands.schema import KINDS, json_schema
from perfci.util.paths import project_root, scenarios_dir

from conftest import DATA, REPO, run_perfci
from factories import edited, make_result, write_results

V1_RESULTS = sorted((DATA / "results-v1").glob("*.json"))


def test_a_result_with_an_empty_server_object_is_bad_input_in_one_line(tmp_path):
    [(path, result)] = write_results(tmp_path, [make_result()])
    path.write_text(json.dumps(edited(result, server={})))
    proc = run_perfci("compare", str(path), "--baseline-dir", str(tmp_path / "b"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{path} (corrupt result): field server.provider: required but missing" in proc.stderr


def test_an_unexpected_exception_is_an_internal_error_with_exit_3(tmp_path, monkeypatch, capsys):
    [(path, _)] = write_results(tmp_path, [make_result()])
    import perfci.commands.compare as command

    def boom(*args, **kwargs):
        raise KeyError("flavor")

    monkeypatch.setattr(command, "compare_results", boom)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["compare", str(path), "--baseline-dir", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert exit_.value.code == 3
    assert err == "perfci: internal error: KeyError: 'flavor'; rerun with PERFCI_DEBUG=1 for the traceback\n"
    monkeypatch.setenv("PERFCI_DEBUG", "1")
    with pytest.raises(SystemExit):
        cli.main(["compare", str(path), "--baseline-dir", str(tmp_path / "b")])
    assert "Traceback" in capsys.readouterr().err


def test_usage_errors_exit_2_and_help_exits_0(capsys):
    for argv, code in ((["compare"], 2), (["no-such-command"], 2), (["--help"], 0), (["compare", "--help"], 0)):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == code, argv


def test_the_schema_validates_results_of_this_and_the_previous_version(tmp_path):
    proc = run_perfci("schema", "result")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema == json.loads(json.dumps(json_schema("result")))
    assert V1_RESULTS, "tests/data/results-v1 holds files written by perfci.result/1"
    for path in V1_RESULTS:
        jsonschema.validate(json.loads(path.read_text()), schema)
    jsonschema.validate(make_result().dump(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(edited(make_result(), server={}), schema)
    for kind in ("baseline", "history", "comparison"):
        proc = run_perfci("schema", kind)
        assert proc.returncode == 0 and json.loads(proc.stdout)["type"] == "object"


def test_version_1_results_load_and_compare(tmp_path):
    """A /1 result (the previous version's, kept as test data) goes through every reader."""
    ran = next(p for p in V1_RESULTS if "rebuild-after-delete" in p.name)
    proc = run_perfci("baseline", "update", str(ran), "--baseline-dir", str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    proc = run_perfci("compare", *map(str, V1_RESULTS), "--baseline-dir", str(tmp_path / "b"),
                      "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    assert "headline.qps_write after/before" in proc.stdout and "**Skipped:** innodb_io_capacity=50" in proc.stdout
    comparison = json.loads((tmp_path / "c.json").read_text())
    jsonschema.validate(comparison, json_schema("comparison"))
    assert comparison["rules"]["confidence"] == 0.995 and comparison["rules"]["prior_cv"] == 0.05
    [case] = [c for c in comparison["cases"] if not c["skipped"]]
    assert case["server"] == "mariadb-10.11" and case["baseline_samples"] == 1


def test_the_project_is_found_from_a_subdirectory_or_perfci_root(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO / "tests" / "data")
    assert project_root() == REPO and scenarios_dir() == REPO / "scenarios"
    other = tmp_path / "team"
    (other / "scenarios").mkdir(parents=True)
    shutil.copy(REPO / "scenarios" / "rebuild-after-delete.yaml", other / "scenarios")
    monkeypatch.setenv("PERFCI_ROOT", str(other))
    assert scenarios_dir() == other / "scenarios"
    proc = run_perfci("list", env={"PERFCI_ROOT": str(other)})
    assert proc.returncode == 0 and proc.stdout.startswith("rebuild-after-delete") and "change-buffer" not in proc.stdout


def test_a_bad_perfci_root_is_one_line(tmp_path):
    proc = run_perfci("list", env={"PERFCI_ROOT": str(tmp_path / "nowhere")})
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: $PERFCI_ROOT={tmp_path / 'nowhere'}: no such directory"


def test_outside_a_project_there_is_no_scenario_dir_to_guess(tmp_path):
    proc = run_perfci("list", cwd=tmp_path)
    # the source checkout ships no perfci/_scenarios (the wheel does: see test_e2e_install)
    assert proc.returncode == 2 and "no scenarios/ directory here or above" in proc.stderr
    assert not Path(REPO / "ci" / "perfci" / "_scenarios").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_published_schemas_are_the_ones_perfci_prints(kind):
    """docs/schema/*.schema.json (linked from the README) never drift from the model."""
    published = json.loads((REPO / "docs" / "schema" / f"{kind}.schema.json").read_text())
    assert published == json.loads(json.dumps(json_schema(kind))), \
        f"regenerate: perfci schema {kind} > docs/schema/{kind}.schema.json"
