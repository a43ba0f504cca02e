"""The interleaved A/B's false-alarm rate, counted on real A/As, beside its detection
of known effects: `perfci ab` exactly as a user runs it (instance pairs, side order
drawn at random, the runner-default instance prior), on rebuild-after-delete smoke.

Each trial appends one JSON line to benchmarks/results/false-alarms.jsonl (date,
effect, instance pairs, burst pairs, exit code, wall time, the judged verdicts of
`before.tps` / `after.tps`, every judged regression) and keeps its bursts file,
gzipped, under benchmarks/results/bursts/, so that every figure can be recomputed
(`python benchmarks/false_alarms.py` prints the table: family-wise false alarms
with their exact binomial interval, detection per effect and phase, minutes per
verdict). Trials of one run alternate effects (A/A, known effect, A/A, ...) so that
a drift of the host over the hours does not fall on one kind only.

The known effect is the server-side CPU cost of test_bench_detection.py (a BEFORE
UPDATE trigger burning BENCHMARK(N, MD5) per updated row; A carries it with N = 0).

    PERFCI_BENCH_TRIALS=20 PERFCI_BENCH_EFFECTS=0,0,0,0.1 \\
      pytest benchmarks --benchmark-only -k false_alarms -p no:randomly

`PERFCI_BENCH_SIZE=target` runs `perfci ab` with no size option at all (sized for its
default 5 % target, judge/design.py) instead of the fixed instances x bursts; the trial
line records the size the A/B chose and what it said it could see. `PERFCI_BENCH_AB_ARGS`
adds options to every A/B (e.g. "--target-mde 0.02 --budget-minutes 30": a 2 % effect
within a 30-minute budget). `PERFCI_BENCH_SCENARIO` / `PERFCI_BENCH_PHASE` run another
scenario or one phase of it (e.g. microbench's update-index: one UPDATE of one row per
transaction, an A/B of a few minutes); `PERFCI_BENCH_DIAL=TPS:ROWS[:BASE]` then gives that
phase's rate with A's trigger and the rows a transaction updates, for the dial, and BASE
iterations on both sides (default 0): BENCHMARK(N >= 1) costs a fixed ~12 µs per row more
than BENCHMARK(0) on MariaDB 10.11, which alone slows a one-row UPDATE by ~6 %, so short
transactions need A at 1 and B at 1 + N. `PERFCI_BENCH_SERVER` (a servers.yaml id, default
local) runs both sides on another server, whose MD5 iteration cost is measured on it. Each
line names the engine commit it ran on, the server and the key its effect is labelled by
(the phase's tps).
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from perfci.judge import calibration
from perfci.judge.burst_verdicts import judge_run
from perfci.model.bursts import BURSTS_FILE
from perfci.model.verdicts import Outcome
from test_bench_detection import iterations_for, md5_iteration_seconds, timed_ab, trigger

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TRIALS = int(os.environ.get("PERFCI_BENCH_TRIALS", "4"))
# the cycle of effects the trials walk through (0: an A/A)
EFFECTS = [float(e) for e in os.environ.get("PERFCI_BENCH_EFFECTS", "0,0,0,0.1").split(",")]
INSTANCES = int(os.environ.get("PERFCI_BENCH_INSTANCES", "2"))
BURSTS = int(os.environ.get("PERFCI_BENCH_BURSTS", "10"))
SIZED = os.environ.get("PERFCI_BENCH_SIZE", "fixed") == "target"
AB_ARGS = shlex.split(os.environ.get("PERFCI_BENCH_AB_ARGS", ""))
SCENARIO = os.environ.get("PERFCI_BENCH_SCENARIO", "rebuild-after-delete")
PHASE = os.environ.get("PERFCI_BENCH_PHASE")
DIAL = [float(x) for x in os.environ.get("PERFCI_BENCH_DIAL", "").split(":") if x]
BASE = int(DIAL.pop(2)) if len(DIAL) > 2 else 0  # iterations on both sides
SERVER = os.environ.get("PERFCI_BENCH_SERVER", "local")
REALISED_KEY = f"{PHASE}.tps" if PHASE else "before.tps"  # the key a known effect is labelled by
LOG = RESULTS / os.environ.get("PERFCI_BENCH_LOG", "sized-ab.jsonl" if SIZED else "false-alarms.jsonl")
ENGINE = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def per_iteration_s() -> float:
    return md5_iteration_seconds(SERVER) if any(EFFECTS) else 0.0


@pytest.mark.parametrize("trial", range(TRIALS))
def test_false_alarms_and_known_effects(benchmark, per_iteration_s, trial, tmp_path):
    effect = EFFECTS[trial % len(EFFECTS)]
    n = iterations_for(effect, per_iteration_s, *DIAL) if effect else 0
    sql = ["--a-sql", trigger(BASE), "--b-sql", trigger(BASE + n)] if effect else []
    size = [] if SIZED else ["--instances", str(INSTANCES), "--bursts", str(BURSTS)]
    phase = ["--phase", PHASE] if PHASE else []
    proc, wall = timed_ab(benchmark, [SCENARIO, "--a", SERVER, "--b", SERVER, *phase, *size, *AB_ARGS, *sql,
                                      "--out", str(tmp_path), "-q"])
    [bursts_file] = tmp_path.glob("*.bursts.json")
    kept = RESULTS / "bursts" / (bursts_file.name + ".gz")
    kept.parent.mkdir(parents=True, exist_ok=True)
    with bursts_file.open("rb") as src, gzip.open(kept, "wb") as dst:
        shutil.copyfileobj(src, dst)
    run_ = BURSTS_FILE.load(bursts_file)
    priors, source = calibration.priors_for(run_, None)
    rows = {r.key: r for r in judge_run(run_, [], 0.01, priors=priors)}
    flagged = sorted(k for k, r in rows.items() if r.spec is not None and r.verdict == Outcome.REGRESSION)
    trial_line = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "engine": ENGINE, "ab_args": AB_ARGS,
        "explain": os.environ.get("PERFCI_EXPLAIN", "auto"), "scenario": SCENARIO, "server": SERVER, "phase": PHASE,
        "realised_key": REALISED_KEY, "effect": effect, "dial": os.environ.get("PERFCI_BENCH_DIAL"),
        "per_iteration_us": round(per_iteration_s * 1e6, 4), "base_iterations": BASE, "iterations": n,
        "instances": len(run_.instances), "planned_instances": run_.planned_instances,
        "bursts": max(run_.bursts_per_phase.values()), "first": [i.first for i in run_.instances],
        "sized": next((line.removeprefix("- planned before it ran: ") for line in proc.stdout.splitlines()
                       if line.startswith("- planned before it ran: ")), None),
        "bursts_file": str(kept.relative_to(ROOT)), "exit": proc.returncode, "wall_s": round(wall, 1),
        "prior": source, "flagged": flagged,
        **{key: {"ratio": round(r.estimate.ratio, 4), "low": round(r.estimate.low, 4), "high": round(r.estimate.high, 4),
                 "verdict": str(r.verdict)}
           for key in sorted({"before.tps", "after.tps", REALISED_KEY})
           if (r := rows.get(key)) is not None and r.estimate is not None}}
    with LOG.open("a") as out:
        out.write(json.dumps(trial_line) + "\n")
    benchmark.extra_info.update(trial_line)
    assert (proc.returncode == 1) == bool(flagged), "the CLI's exit code and the re-judged bursts disagree"
