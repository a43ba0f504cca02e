"""Two real nights of one case, as the nightly workflow runs them (#23): does the issue
open on the night a ~5 % server-side slowdown arrives, and does a quiet night 2 open
nothing?

Each night is the bench job's commands on this host — `perfci run`, `perfci compare`,
`perfci confirm` (the A/B against the reference, sized by its defaults: 5 % at 90 %
power within 25 minutes) — then the report job's `perfci nightly --dry-run` writing the
issue files instead of calling GitHub. Night 1 runs the distribution's MariaDB as it is
and becomes the reference. Night 2:

- `slowdown`: the same server with `innodb_compression_level=9` (zlib's slowest; the
  default is 6): every recompressed page costs more CPU in the statement path of
  rebuild-after-delete's compressed tables. A quick A/B measured before.tps B/A 0.946
  [0.851, 1.051] (2 x 10 pairs), after.tps 1.00: about 5 % on one phase, none on the
  other. Tonight's config is not the reference's, so the reference A/B runs.
- `quiet`: the same server and config as night 1: no A/B runs (nothing changed), and
  one night against a one-night history can call nothing: nothing may open.

One JSON line per night 2 is appended to benchmarks/results/two-nights.jsonl (verdicts,
B/A and interval of each phase's tps, the MDE, minutes, the issue's first lines); the
A/B's bursts (gzipped), the confirmation and the issue file are kept under
benchmarks/results/two-nights/<stamp>-<kind>/.

    PERFCI_BENCH_NIGHTS=slowdown,quiet pytest benchmarks --benchmark-only -k two_nights
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
KINDS = os.environ.get("PERFCI_BENCH_NIGHTS", "slowdown,quiet").split(",")
NIGHT_2_CONFIG = {"slowdown": ["--config", "innodb_compression_level=9"], "quiet": []}
SCENARIO = "rebuild-after-delete"
pytestmark = pytest.mark.server


def perfci(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "perfci.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600, env={**os.environ, "PYTHONPATH": str(ROOT / "ci")})
    assert proc.returncode in ok, f"perfci {' '.join(args)}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc


def night(work: Path, name: str, history: Path, baselines: Path, config: list[str]) -> dict:
    """The bench job and the report job of one night; what each said."""
    d = work / name
    perfci("run", SCENARIO, "--profile", "smoke", "--server", "local", *config, "--out", str(d / "results"), "-q")
    compared = perfci("compare", str(d / "results"), "--baseline-dir", str(baselines), "--history", str(history),
                      "--report", str(d / "report.md"), ok=(0, 1))
    t0 = time.monotonic()
    confirmed = perfci("confirm", str(d / "results"), "--baseline-dir", str(baselines), "--history", str(history),
                       "--out", str(d / "confirm"), "-q", ok=(0, 1))
    ab_minutes = (time.monotonic() - t0) / 60
    (d / "confirmations").mkdir()
    for c in (d / "confirm").glob("*.confirmation.json"):
        shutil.copy(c, d / "confirmations" / c.name)
    reported = perfci("nightly", str(d / "results"), "--history", str(history), "--baseline-dir", str(baselines),
                      "--confirmations", str(d / "confirmations"), "--dry-run", "--out", str(d / "issues"), ok=(0, 1))
    return {"compare_exit": compared.returncode, "confirm_exit": confirmed.returncode,
            "nightly_exit": reported.returncode, "nightly_out": reported.stdout, "ab_minutes": round(ab_minutes, 1),
            "issues": sorted((d / "issues").glob("*.md")) if (d / "issues").exists() else [],
            "confirmations": sorted((d / "confirm").glob("*.confirmation.json")),
            "bursts": sorted((d / "confirm").glob("**/*.bursts.json"))}


def keep(kind: str, stamp: str, second: dict) -> Path:
    """The night-2 files behind the published line, in the repository."""
    kept = RESULTS / "two-nights" / f"{stamp}-{kind}"
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "nightly.txt").write_text(second["nightly_out"])  # what the report job did (a quiet night: nothing)
    for path in second["issues"]:
        shutil.copy(path, kept / path.name)
    for path in second["confirmations"]:  # its bursts file: the kept copy, not the run's temporary one
        data = json.loads(path.read_text())
        if data.get("bursts_file"):
            data["bursts_file"] = str((kept / (Path(data["bursts_file"]).name + ".gz")).relative_to(ROOT))
        (kept / path.name).write_text(json.dumps(data, indent=1) + "\n")
    for path in second["bursts"]:
        with path.open("rb") as src, gzip.open(kept / (path.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
    return kept


@pytest.mark.parametrize("kind", KINDS)
def test_two_nights(benchmark, kind, tmp_path):
    history, baselines = tmp_path / "history", tmp_path / "baselines"
    history.mkdir()
    baselines.mkdir()  # no pinned baseline: the case is judged against its history, as a new project's is
    first = night(tmp_path, "night-1", history, baselines, [])
    assert first["issues"] == [] and first["confirmations"] == []  # no reference yet: nothing to A/B
    t0 = time.monotonic()
    second = benchmark.pedantic(night, args=(tmp_path, "night-2", history, baselines, NIGHT_2_CONFIG[kind]),
                                rounds=1, iterations=1)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = keep(kind, stamp, second)
    confirmation = json.loads(second["confirmations"][0].read_text()) if second["confirmations"] else {}
    issue_head = second["issues"][0].read_text().splitlines()[:6] if second["issues"] else []
    line = {"date": stamp, "kind": kind, "night_2_config": NIGHT_2_CONFIG[kind], "scenario": SCENARIO,
            "minutes": round((time.monotonic() - t0) / 60, 1), "ab_minutes": second["ab_minutes"],
            "trigger": confirmation.get("trigger"), "status": confirmation.get("status"),
            "sizing": confirmation.get("sizing"), "ab_regressions": confirmation.get("ab_regressions"),
            "ratios": {k: {f: v[f] for f in ("ratio", "low", "high", "mde", "verdict") if f in v}
                       for k, v in (confirmation.get("ratios") or {}).items() if k.endswith(".tps")},
            "issues": len(second["issues"]), "issue_head": issue_head, "nightly_exit": second["nightly_exit"],
            "kept": str(kept.relative_to(ROOT))}
    with (RESULTS / "two-nights.jsonl").open("a") as out:
        out.write(json.dumps(line) + "\n")
    benchmark.extra_info.update(line)
    if kind == "quiet":
        assert second["issues"] == [] and second["confirmations"] == [], line
    else:
        assert confirmation.get("trigger") == "server-changed", line
