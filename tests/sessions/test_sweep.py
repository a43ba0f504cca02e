"""Releases in order, the sweep's file, table and heatmap, and what a bisect step
concludes from an A/B's rows — without servers."""

from __future__ import annotations

import json
import math

import pytest

from perfci.judge.bisect import step_of
from perfci.judge.paired import PairedEstimate, PairedVerdict
from perfci.model.abratio import AbRatio
from perfci.model.metrics import default_spec
from perfci.model.sweep import Sweep, SweepCell
from perfci.model.verdicts import Outcome
from perfci.providers.servers import ServersFile
from perfci.report.sweep_report import heatmap, shade, sweep_markdown
from perfci.sessions import sweep_session
from perfci.util.errors import BadInput

from conftest import run_perfci

MAVEN = "maven:g:a:{v}/x.tar.gz#sha256=" + "0" * 64


def servers(*entries: tuple[str, str | None, str | None]) -> ServersFile:
    return ServersFile.model_validate({"servers": [
        {"id": i, "spec": MAVEN.format(v=i), **({"flavor": f} if f else {}), **({"version": v} if v else {})}
        for i, f, v in entries]})


def test_the_releases_between_two_ids_are_one_flavors_in_version_order():
    known = servers(("mysql-8.0.31", "mysql", "8.0.31"), ("mysql-8.0.9", "mysql", "8.0.9"),
                    ("mariadb-11.4.5", "mariadb", "11.4.5"), ("mysql-5.7.22", "mysql", "5.7.22"),
                    ("mysql-8.0.15", "mysql", "8.0.15"), ("mysql-8.0.15-again", "mysql", "8.0.15"),
                    ("image", None, None))
    between = [e.id for e in known.releases_between("mysql-8.0.9", "mysql-8.0.31")]
    assert between == ["mysql-8.0.9", "mysql-8.0.15", "mysql-8.0.31"]  # numeric, not text order; one per version
    assert [e.id for e in known.releases_between("mysql-8.0.31", "mysql-5.7.22")][0] == "mysql-5.7.22"
    assert known.releases_from("mysql-8.0.31", "mysql-8.0.9") == ["mysql-8.0.31", "mysql-8.0.15", "mysql-8.0.9"]
    assert known.releases_from("mysql-8.0.9", "mysql-8.0.31") == between
    with pytest.raises(BadInput, match="'image' has no `flavor` and `version`"):
        known.releases_between("image", "mysql-8.0.31")
    with pytest.raises(BadInput, match="need one flavor"):
        known.releases_between("mariadb-11.4.5", "mysql-8.0.31")
    with pytest.raises(ValueError, match="version"):
        servers(("x", "mysql", "8.0.x"))


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_the_projects_servers_list_shows_each_release(tmp_path):
    proc = run_perfci("servers", "list")
    assert proc.returncode == 0, proc.stderr
    assert "mysql 8.0.31" in proc.stdout and "mariadb 11.4.5" in proc.stdout and "unordered" in proc.stdout


def _ratio(ratio: float, verdict: str, mde: float = 0.04) -> AbRatio:
    return AbRatio(a=1000.0, b=1000.0 * ratio, ratio=ratio, low=ratio - 0.02, high=ratio + 0.02, confidence=0.999,
                   mde=mde, verdict=verdict)


def _sweep() -> Sweep:
    cells = [
        SweepCell(case="default", server="mysql-8.0.31", status="measured", version="8.0.31",
                            base_version="8.0.15", regressions=["point-query.qps"], sizing="2 x 10",
                            why="the explain pass (regression in point-query.qps)\n\n| `rec_init_offsets` | self |"
                                " <img src=x> @team |",
                            ratios={"point-query.qps": _ratio(0.90, "regression"),
                                    "insert.qps": _ratio(1.01, "inconclusive", 0.08),
                                    "point-query.statement_cpu_us_per_txn": _ratio(1.12, "regression")}),
        SweepCell(case="default", server="mysql-8.0.12", status="skipped",
                            reason="innodb_redo_log_capacity: unknown"),
    ]
    return Sweep(scenario="microbench", scenario_hash="sha256:x", profile="smoke",
                           servers=["mysql-8.0.15", "mysql-8.0.31", "mysql-8.0.12"], runner_class="local",
                           started_at="2026-11-25T09:00:00Z", cells=cells)


def test_the_sweep_table_shows_b_over_base_with_intervals_and_what_was_not_measured(tmp_path):
    found = _sweep()
    picture = heatmap(found, tmp_path / "sweep.png")
    assert picture is not None and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = sweep_markdown(found, picture)
    assert "against the base `mysql-8.0.15` (8.0.15)" in text
    assert "### `qps` (B/base; higher is better)" in text and "### `statement_cpu_us_per_txn`" in text
    assert "| default | `point-query` | 0.900 [0.880, 0.920] 🔴 slower | – |" in text
    assert "| default | `insert` | 1.010 [0.990, 1.030] n.s. | – |" in text
    assert "| | MDE (90 % power) | 4.0%–8.0% | – |" in text
    assert "- default on `mysql-8.0.12`: skipped, innodb\\_redo\\_log\\_capacity: unknown" in text
    assert "![heatmap](sweep.png)" in text
    # the regressed cell's Why, from the sweep file (input): shown, rendered inert
    assert "### Why default on `mysql-8.0.31` got slower: the explain pass (regression in point-query.qps)" in text
    assert "`rec_init_offsets`" in text and "<img" not in text and "@team" not in text


def test_a_sweep_resumes_only_its_own_servers_and_scenario(tmp_path):
    first = sweep_session.start("rebuild-after-delete", "smoke", ["mariadb-10.11", "mysql-8.0.31"], "local", tmp_path)
    path = sweep_session.sweep_path(tmp_path, "rebuild-after-delete", "smoke")
    path.write_text(json.dumps(first.dump()))
    again = sweep_session.start("rebuild-after-delete", "smoke", ["mariadb-10.11", "mysql-8.0.31"], "local", tmp_path)
    assert again == first
    with pytest.raises(BadInput, match="a sweep of other servers"):
        sweep_session.start("rebuild-after-delete", "smoke", ["mariadb-10.11", "mysql-8.0.15"], "local", tmp_path)
    with pytest.raises(BadInput, match="needs the base and at least one more"):
        sweep_session.start("rebuild-after-delete", "smoke", ["mariadb-10.11"], "local", tmp_path / "x")
    with pytest.raises(BadInput, match="no-such"):
        sweep_session.start("rebuild-after-delete", "smoke", ["mariadb-10.11", "no-such"], "local", tmp_path / "x")


def _row(key: str, ratio: float, verdict: Outcome) -> PairedVerdict:
    est = PairedEstimate(n_pairs=20, block=2, n_blocks=10, scale="log", ratio=ratio, low=ratio - 0.03,
                         high=ratio + 0.03, p=0.001, spread=0.05, lag1=0.0)
    return PairedVerdict(key, default_spec("tps"), 1000.0, 1000.0 * ratio, est, 0.001, verdict)


def test_a_bisect_step_is_a_regression_in_any_phase_and_unchanged_only_when_every_phase_is():
    rows = [_row("before.tps", 0.99, Outcome.UNCHANGED), _row("after.tps", 0.93, Outcome.REGRESSION),
            _row("after.qps", 0.80, Outcome.REGRESSION)]
    step = step_of("a", "b", rows, "tps")
    assert (step.verdict, step.ratio) == ("regression", 0.93)  # the metric asked for, not qps
    assert step_of("a", "b", [_row("before.tps", 0.99, Outcome.UNCHANGED)], "tps").verdict == "unchanged"
    mixed = [_row("before.tps", 0.99, Outcome.UNCHANGED), _row("after.tps", 0.96, Outcome.INCONCLUSIVE)]
    assert step_of("a", "b", mixed, "tps").verdict == "inconclusive"
    assert step_of("a", "b", [_row("x.tps", 1.1, Outcome.IMPROVEMENT)], "tps").verdict == "improvement"
    assert step_of("a", "b", [], "tps").verdict == "inconclusive"


def test_the_heatmap_colours_only_what_the_ab_decided():
    """An unstable 0.74 [0.38, 1.42] is grey, not the deep red of a found slowdown."""
    assert shade(_ratio(0.90, "regression")) == 0.90 and shade(_ratio(1.01, "unchanged")) == 1.01
    assert math.isnan(shade(_ratio(0.74, "unstable"))) and math.isnan(shade(_ratio(0.95, "inconclusive")))
    assert math.isnan(shade(None))


def test_a_counted_sweep_leads_with_instructions_per_transaction_lower_being_better(tmp_path):
    """`perfci sweep --measure work`: its bursts carry no time metric, so the table (and the
    heatmap, red where a release runs more instructions) is instructions per transaction."""
    cell = SweepCell(case="default", server="mysql-8.0.31", status="measured", version="8.0.31", base_version="5.7.22",
                     regressions=["full-scan.instructions_per_txn"], sizing="1 x 4",
                     ratios={"full-scan.instructions_per_txn": _ratio(1.25, "regression"),
                             "point-query.instructions_per_txn": _ratio(0.98, "unchanged"),
                             "update-no-index.fsyncs_per_txn": _ratio(3.0, "unchanged")})
    counted = Sweep(scenario="microbench", scenario_hash="sha256:x", profile="smoke",
                    servers=["mysql-5.7.22", "mysql-8.0.31"], runner_class="local", started_at="2026-11-28T09:00:00Z",
                    cells=[cell])
    text = sweep_markdown(counted, heatmap(counted, tmp_path / "sweep.png"))
    assert "### `instructions_per_txn` (B/base; lower is better)" in text, text
    assert "| default | `full-scan` | 1.250 [1.230, 1.270] 🔴 more work |\n" in text
    assert "`qps`" not in text and "statement_cpu" not in text and "![heatmap](sweep.png)" in text
