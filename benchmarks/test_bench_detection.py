"""Known-effect validation of `perfci ab` (interleaved) on a real server.

The slowdown is real and server-side, and its size is dialled: a BEFORE UPDATE
trigger on sbtest1 burns CPU inside every updated row with BENCHMARK(N, MD5(..)).
Both sides carry the trigger (A with N = 0, so the trigger's own cost is on both
sides); B's N is set from the server's measured cost of one MD5 iteration, the
transaction time of the `before` phase (BEFORE_TPS) and the rows updated per
transaction (Handler_update, deterministic under fixed work), so that B's `before`
throughput is (1 - effect) of A's. The `after` phase, whose transactions take
about twice as long, gets about half the effect. A CPU cost in the statement path
is what a code regression (a slower comparator, a new check per row) looks like,
and unlike a sleep it does not depend on timer granularity.

Each trial appends one JSON line to $PERFCI_BENCH_TRIALS (default
benchmarks/.benchmarks/detection.jsonl): effect, verdict of before.tps, estimate,
interval, wall time.

    PERFCI_BENCH_EFFECTS=0,0.05 PERFCI_BENCH_TRIES=3 pytest benchmarks --benchmark-only -k detection
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfci.providers import open_provider
from perfci.providers.servers import resolve_server

ROOT = Path(__file__).resolve().parent.parent
EFFECTS = [float(e) for e in os.environ.get("PERFCI_BENCH_EFFECTS", "0,0.05").split(",")]
TRIES = int(os.environ.get("PERFCI_BENCH_TRIES", "1"))
BURSTS = int(os.environ.get("PERFCI_BENCH_BURSTS", "30"))
TRIALS = Path(os.environ.get("PERFCI_BENCH_TRIALS", str(ROOT / "benchmarks" / ".benchmarks" / "detection.jsonl")))
OUT = os.environ.get("PERFCI_BENCH_OUT")  # keep the A/Bs' burst files here (pytest prunes its tmp dirs)
# the `before` phase's transaction rate the dial assumes, fitted to what the dial realised:
# with 200 (the first A/As' rate) a nominal 5 % (166 iterations) gave before.tps B/A
# 0.909-0.912 in the three kept sized runs (sized-ab.jsonl: 9 % realised); the same cost per
# transaction at 5 % needs 166 x 0.0526 / 0.0989 = 88 iterations, i.e. a rate of 376
BEFORE_TPS = 376.0
ROWS_UPDATED_PER_TXN = 5.1    # Handler_update per transaction over the `before` bursts (3.3 -> 5.3, deterministic)
pytestmark = pytest.mark.server


def md5_iteration_seconds(server_spec: str = "local") -> float:
    """What one BENCHMARK iteration of MD5 costs on this server (a servers.yaml id or a
    spec) and CPU."""
    server = open_provider(resolve_server(server_spec).spec, Path(tempfile.mkdtemp(prefix="perfci-cost-")) / "work")
    server.start({"innodb_buffer_pool_size": "64M"})
    try:
        with server.connect() as conn, conn.cursor() as cur:
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                cur.execute("SELECT BENCHMARK(2000000, MD5('perfci'))")
                best = min(best, time.perf_counter() - t0)
        return best / 2_000_000
    finally:
        server.stop()
        server.cleanup()


def trigger(iterations: int) -> str:
    return ("CREATE TRIGGER perfci_known_effect BEFORE UPDATE ON sbtest1 FOR EACH ROW "
            f"SET @perfci_known_effect = BENCHMARK({iterations}, MD5('perfci'))")


def iterations_for(effect: float, per_iteration_s: float, tps: float = BEFORE_TPS,
                   rows_per_txn: float = ROWS_UPDATED_PER_TXN) -> int:
    """N such that B's before-phase tps is (1 - effect) of A's (or another phase's, given
    its rate with the trigger and the rows each of its transactions updates)."""
    txn_s = 1 / tps
    added_s = txn_s * (1 / (1 - effect) - 1)
    return round(added_s / rows_per_txn / per_iteration_s)


@pytest.fixture(scope="module")
def per_iteration_s() -> float:
    return md5_iteration_seconds()


def timed_ab(benchmark, ab_args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """`perfci ab AB_ARGS` of this checkout, once, timed by pytest-benchmark; (process, wall seconds)."""
    args = [sys.executable, "-m", "perfci.cli", "ab", *ab_args]

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=3600,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "ci")})

    t0 = time.monotonic()
    proc = benchmark.pedantic(run, rounds=1, iterations=1)
    wall = time.monotonic() - t0
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return proc, wall


@pytest.mark.parametrize("attempt", range(TRIES))
@pytest.mark.parametrize("effect", EFFECTS)
def test_known_effect_is_detected(benchmark, per_iteration_s, effect, attempt, tmp_path):
    n = iterations_for(effect, per_iteration_s)
    out = Path(OUT) / f"effect{effect:g}-try{attempt}-{time.strftime('%H%M%S')}" if OUT else tmp_path
    proc, wall = timed_ab(benchmark, ["rebuild-after-delete", "--bursts", str(BURSTS), "--a-sql", trigger(0),
                                      "--b-sql", trigger(n), "--out", str(out), "-q"])
    # metric | A | B | B/A | interval | adj. p | MDE | pairs | verdict
    rows = {m[0]: m for m in re.findall(r"^\| `([^`]+)` [↑↓] \| \S+ \| \S+ \| (\S+) \| \[(\S+), (\S+)\] \| (\S+) \|"
                                        r" [^|]+ \| [^|]+ \| ([^|]+) \|$", proc.stdout, re.MULTILINE)}
    flagged = sorted(k for k, m in rows.items() if "regression" in m[5])
    bursts_file = next((str(p) for p in out.glob("*.bursts.json")), None)
    trial = {"effect": effect, "iterations": n, "per_iteration_us": round(per_iteration_s * 1e6, 4),
             "bursts": BURSTS, "bursts_file": bursts_file, "exit": proc.returncode, "wall_s": round(wall, 1), "flagged": flagged,
             **{f"{key}": {"ratio": float(rows[key][1]), "low": float(rows[key][2]), "high": float(rows[key][3]),
                           "p": rows[key][4], "verdict": rows[key][5].strip()}
                for key in ("before.tps", "after.tps") if key in rows}}
    TRIALS.parent.mkdir(parents=True, exist_ok=True)
    with TRIALS.open("a") as out:
        out.write(json.dumps(trial) + "\n")
    benchmark.extra_info.update(trial)
    if effect == 0:
        assert proc.returncode == 0, proc.stdout
    elif effect >= 0.05:
        assert "before.tps" in flagged, proc.stdout
