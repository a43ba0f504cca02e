"""A resampling null of the A/B's verdict (#55): pseudo-A/As built from the kept real
A/As' instance pairs, judged by the real verdict code (paired.judge_instances with the
priors an A/B uses), per configuration that ships.

    python benchmarks/resampled_null.py [--trials 100000] [--seed 1] > benchmarks/results/resampled-null-<date>.md

Every measured instance pair of every kept real timed A/A (benchmarks/results/aa-campaign
and the effect-0 runs of false-alarms.jsonl / sized-ab.jsonl) becomes, per phase, one
unit: its judged metrics' burst pairs. A pseudo-A/A draws K units at random (with
replacement, any server and phase: a pool as mixed as the runs), swaps each unit's sides
with probability 1/2 (under "no change" A and B are exchangeable, and the swap keeps
every instance's own offset and burst dependence), and judges them as one A/B of one
phase (or of P phases, P draws each). A false alarm is any judged key flagged
"regression". Levels are the whole A/B's (interim and final look together: an upper
bound for the sequential test). The upper 95 % bound is Clopper-Pearson.

What this assumes: instance pairs are exchangeable between runs, servers and phases,
and each keeps its own spread. It does not assume normality or any variance.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from scipy.stats import beta  # noqa: E402

from perfci.judge.burst_verdicts import instance_tables, judged_specs  # noqa: E402
from perfci.judge.calibration import floored_priors  # noqa: E402
from perfci.judge.paired import ALPHA, default_priors, judge_instances  # noqa: E402
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.metrics import DEFAULT_COMPARED  # noqa: E402
from perfci.model.noise import NoiseModel  # noqa: E402
from perfci.model.verdicts import Outcome  # noqa: E402

LOGS = ("benchmarks/results/false-alarms.jsonl", "benchmarks/results/sized-ab.jsonl")
NIGHTLY_ALPHA = 0.00167  # a nightly reference A/B's share of the false-issue budget (README)
CALIBRATED = ROOT / "benchmarks/results/calibrate-20261125-noise.json"

Unit = dict[str, tuple[list[float], list[float]]]   # metric -> (A values, B values)


@dataclass(frozen=True)
class Config:
    name: str
    instances: int
    phases: int
    alpha: float
    calibrated: bool = False


CONFIGS = (
    Config("`perfci ab`, one phase (sized 12 instance pairs)", 12, 1, ALPHA),
    Config("`perfci ab` / the PR check, two phases (sized 12)", 12, 2, ALPHA),
    Config("nightly reference A/B, one phase (sized 12)", 12, 1, NIGHTLY_ALPHA),
    Config("nightly reference A/B, one phase, calibrated model", 12, 1, NIGHTLY_ALPHA, calibrated=True),
    Config("nightly reference A/B, 19 phases (sized 1 instance pair)", 1, 19, NIGHTLY_ALPHA),
    Config("`perfci ab --instances 2` (a quick look)", 2, 1, ALPHA),
)


def kept_runs() -> list[InterleavedRun]:
    paths = sorted((ROOT / "benchmarks/results/aa-campaign").glob("*/*/*.bursts.json.gz"))
    for log in LOGS:
        for line in (ROOT / log).read_text().splitlines():
            record = json.loads(line)
            if record.get("effect", 0) == 0 and (ROOT / record["bursts_file"]).exists():
                paths.append(ROOT / record["bursts_file"])
    return [BURSTS_FILE.parse_text(gzip.decompress(p.read_bytes()).decode(), str(p))
            for p in dict.fromkeys(paths)]


def units(runs: list[InterleavedRun]) -> list[Unit]:
    out = []
    for run in runs:
        if run.measure != "time":
            continue
        for table in instance_tables(run):
            by_phase: dict[str, Unit] = {}
            for key, pair in table.items():
                phase, metric = key.split(".", 1)
                if metric in DEFAULT_COMPARED and len(pair[0]) >= 2:
                    by_phase.setdefault(phase, {})[metric] = pair
            out += [u for u in by_phase.values() if "tps" in u]
    return out


def pseudo_aa(pool: list[Unit], config: Config, rng: random.Random) -> list[dict]:
    tables: list[dict] = [{} for _ in range(config.instances)]
    for phase in range(config.phases):
        for table in tables:
            unit = pool[rng.randrange(len(pool))]
            swap = rng.random() < 0.5
            table.update({f"p{phase}.{m}": ((b, a) if swap else (a, b)) for m, (a, b) in unit.items()})
    return tables


def false_alarm_rate(pool: list[Unit], config: Config, trials: int, seed: int, learned) -> tuple[int, float]:
    rng = random.Random(seed)
    alarms = 0
    for _ in range(trials):
        tables = pseudo_aa(pool, config, rng)
        specs = judged_specs({k: v for t in tables for k, v in t.items()}, [])
        priors = default_priors(specs)
        if config.calibrated:
            priors = floored_priors(priors, {f"p0.{metric}": prior for metric, prior in learned.items()})
        rows = judge_instances(tables, specs, alpha=config.alpha, priors=priors)
        alarms += any(r.verdict == Outcome.REGRESSION for r in rows if r.spec is not None)
    return alarms, float(beta.ppf(0.95, alarms + 1, trials - alarms))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", type=int, nargs="*", help="config indexes")
    args = parser.parse_args()
    runs = kept_runs()
    pool = units(runs)
    model = NoiseModel.model_validate_json(CALIBRATED.read_text())
    learned: dict = {}  # per metric, the narrowest any phase learned (the riskiest)
    for key, prior in model.priors().items():
        metric = key.split(".", 1)[1]
        if metric not in learned or prior.sd < learned[metric].sd:
            learned[metric] = prior
    here = __import__("subprocess").run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip()
    print(f"# Resampling null of the A/B verdict (engine at `{here}`)\n")
    print(f"{len(runs)} kept real timed A/As, {len(pool)} units (instance pair x phase); "
          f"{args.trials:,} pseudo-A/As per configuration, seed {args.seed}. "
          "A false alarm: any judged key flagged `regression`. Bound: Clopper-Pearson upper 95 %.\n")
    print("| configuration | K | phases | level | false alarms | rate | upper 95 % | within the level | minutes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, config in enumerate(CONFIGS):
        if args.only and i not in args.only:
            continue
        started = time.monotonic()
        alarms, upper = false_alarm_rate(pool, config, args.trials, args.seed + i, learned)
        print(f"| {config.name} | {config.instances} | {config.phases} | {config.alpha:.3%} | {alarms} | "
              f"{alarms / args.trials:.4%} | {upper:.4%} | {'yes' if upper <= config.alpha else '**no**'} | "
              f"{(time.monotonic() - started) / 60:.1f} |", flush=True)


if __name__ == "__main__":
    main()
