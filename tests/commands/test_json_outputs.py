"""`--json [PATH]`, one convention on every command: with no PATH the JSON is all of
stdout (the text goes to stderr), with one it is written there and the text stays on
stdout; what is printed validates against the published schema (docs/schema/). The
commands that start servers (ab, confirm, sweep, bisect) are checked where their
end-to-end tests run them."""

from __future__ import annotations

import json

import jsonschema
import pytest

from perfci.alert.nightly import NightOptions, run_night
from perfci.store.baseline_files import update_baselines

from conftest import REPO, run_perfci
from factories import make_result, write_results
from simulated_month import month

pytestmark = pytest.mark.slow


def schema(kind: str) -> dict:
    return json.loads((REPO / "docs" / "schema" / f"{kind}.schema.json").read_text())


def as_json(kind: str, *args: str, cwd=REPO, expect: int = 0) -> dict:
    """The command with a bare --json: stdout is one JSON document of its schema."""
    proc = run_perfci(*args, "--json", cwd=cwd)
    assert proc.returncode == expect, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    jsonschema.validate(data, schema(kind))
    return data


def test_list_servers_list_and_validate_print_their_json_alone_on_stdout():
    listed = as_json("scenarios", "list")
    names = [s["name"] for s in listed["scenarios"]]
    assert "rebuild-after-delete" in names and listed["invalid"] == []
    rebuild = next(s for s in listed["scenarios"] if s["name"] == "rebuild-after-delete")
    assert [p["name"] for p in rebuild["profiles"]] == ["smoke", "nightly", "seed"]
    assert rebuild["profiles"][0]["scenario_hash"].startswith("sha256:")
    servers = as_json("servers-list", "servers", "list")
    local = next(s for s in servers["servers"] if s["id"] == "mariadb-10.11")
    assert local["enabled"] and local["spec"] == "local" and local["installed"]
    validated = as_json("validation", "validate")
    assert validated["ok"] and validated["pins"] == [] and all(f["ok"] for f in validated["files"])


def test_validate_json_names_the_bad_file_and_still_exits_2(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "broken.yaml").write_text("name: broken\n")
    data = as_json("validation", "validate", cwd=tmp_path, expect=2)
    [bad] = data["files"]
    assert not data["ok"] and not bad["ok"] and bad["path"].endswith("broken.yaml") and bad["error"]


def test_a_json_path_keeps_the_text_on_stdout(tmp_path):
    target = tmp_path / "out" / "list.json"
    target.parent.mkdir()
    proc = run_perfci("list", "--json", str(target))
    assert proc.returncode == 0 and "--profile smoke" in proc.stdout and not proc.stdout.startswith("{")
    jsonschema.validate(json.loads(target.read_text()), schema("scenarios"))


def test_history_changes_nightly_and_compare_as_json(tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    for results in month():
        run_night(results, NightOptions(history_root=history), dry_run_dir=tmp_path / "issues")
    changes = as_json("changes", "history", "changes", str(history))
    assert changes["changes"] and all(c["history_file"] in changes["files"] for c in changes["changes"])
    assert any(c["metric"] == "after.tps" and c["change_pct"] < -5 for c in changes["changes"]), changes["changes"]

    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path / "base", [make_result(tps=1000 + 7 * i) for i in range(5)]), root=root)
    [(slow, _)] = write_results(tmp_path / "tonight", [make_result(tps=700, splits=1.5)])
    compared = as_json("comparison", "compare", str(slow), "--baseline-dir", str(root), expect=1)
    assert compared["schema"].startswith("perfci.comparison/")
    night = as_json("nightly", "nightly", str(slow), "--history", str(tmp_path / "history"), "--baseline-dir",
                    str(root), "--dry-run", "--out", str(tmp_path / "issues-2"), "--min-nights", "1", expect=1)
    [standing] = night["standing"]
    assert night["outcome"] == "regression" and "before.tps" in standing["keys"]
    assert standing["case"].startswith("local/") and any(a.startswith("history ") for a in night["actions"])


def test_doctor_as_json():
    proc = run_perfci("doctor", "--json")  # its exit code depends on this host: ready or not
    report = json.loads(proc.stdout)
    jsonschema.validate(report, schema("doctor"))
    assert report["ready"] == (proc.returncode == 0)
    assert {f["check"] for f in report["findings"]} >= {"perfci pins", "CPU profiles (explain pass)"}
