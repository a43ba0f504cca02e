"""A month of nightly looks on a case where nothing changed, simulated from real kept A/As
and judged by the real judges at the false-issue budget's levels (judge/budget.py): how
many false issues a case gets in a month, per road, with its interval.

    python benchmarks/month_simulation.py [--seeds 200] [--levels budget|former]
        [--drift 0.6] [--step 0.05] > benchmarks/results/month-simulation-<date>.md

Each seed is one case-month: HISTORY nights of history, then LOOKS nights each looked at
as the nightly does, on every judged metric of rebuild-after-delete (smoke):
- a night's run is one side of one instance pair of a real A/A of that scenario
  (`benchmarks/results/bursts/`: the mean per judged metric of its first measured bursts,
  as many as the shortest kept side has, every metric of the night from the same
  instance: their correlation kept), drawn with
  replacement from every side of every kept A/A (each metric centred as
  judge/resample.py centres it);
- the threshold road: tonight against the last --window (10) nights that did not stand
  on the metric (judge/stats.judge at compare's 99.5 %); an issue needs --min-nights
  regressed nights in a row (the nightly's default: judge/budget.DEFAULT_MIN_NIGHTS)
  and, with no A/B behind it, p at the thresholds' share (the nightly's gate,
  alert/regression_issues.below_budget; a work counter never opens one on its own test
  there: t_tested); taken as if no A/B ran (the worst case for this road);
- the change-point road: judge/changes.persisting_changes over the nights so far, at the
  change points' share shared over the judged metrics; a location counts once;
- the reference-A/B road: every night, as for a branch build, an A/A of K instance pairs
  (the sized design's K at its level) drawn whole from every instance pair of the kept
  A/As — each at its real length, never stretched — with the interim look at half of
  them, judged by judge/paired.judge_instances with the runner's per-metric priors.
The count is of alarms (a road-night that would open an issue if none were open): at
least the issues, since an open issue takes later alarms as comments.

What it assumes, said beside the numbers: nights are exchangeable draws of this runner's
instances (no drift from night to night); a night's run is one fresh instance like an
A/A side (the nightly profile's runs are longer: its noise is at most this); instance
pairs of the kept A/As are exchangeable for the A/B. Two cases are built to break it:
`--drift R` puts an AR(1) factor (sd 2 %, correlation R) on every night's time metrics
(a runner whose speed wanders); `--step E` slows the server by E from night
HISTORY + LOOKS/2 on (throughput x (1 - E), latency / (1 - E), counters unchanged; the
A/B road's B side too): the simulator must see it, or it is blind.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import multiprocessing
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from false_alarms import clopper_pearson  # noqa: E402  (the one exact interval of benchmarks/)
from perfci.alert.regression_issues import t_tested  # noqa: E402
from perfci.judge import design, resample  # noqa: E402
from perfci.judge.budget import DEFAULT_MIN_NIGHTS, IssueBudget  # noqa: E402
from perfci.judge.burst_verdicts import INTERIM_SHARE, interim_look, judged_specs  # noqa: E402
from perfci.judge.changes import persisting_changes  # noqa: E402
from perfci.judge.paired import judge_instances, runner_default_prior  # noqa: E402
from perfci.judge.stats import estimate_p, judge, ratio_interval  # noqa: E402
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.history import HistoryRecord  # noqa: E402
from perfci.model.scenario import load_scenario, resolve  # noqa: E402
from perfci.model.verdicts import Outcome  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SCENARIO = "rebuild-after-delete"
HISTORY, LOOKS, WINDOW = 30, 30, 10
DRIFT_SD = 0.02
FORMER = {"ab": 0.005, "change": 0.005, "threshold": 1.0}  # before the budget: 0.5 % A/B and change points, no gate


def kept_aas() -> list[tuple[str, InterleavedRun]]:
    """The real A/As of rebuild-after-delete whose bursts are kept (every design)."""
    runs = []
    for log in ("false-alarms.jsonl", "sized-ab.jsonl"):
        for line in (RESULTS / log).read_text().splitlines():
            trial = json.loads(line)
            if trial["effect"] == 0 and trial.get("bursts_file"):
                path = ROOT / trial["bursts_file"]
                runs.append((path.name, BURSTS_FILE.parse_text(gzip.decompress(path.read_bytes()).decode(), str(path))))
    for log in sorted((RESULTS / "aa-campaign").glob("*/runs.jsonl")):
        for line in log.read_text().splitlines():
            run = json.loads(line)
            if run.get("scenario") == SCENARIO and run["exit"] in (0, 1):
                for path in (log.parent / run["id"]).glob("*.bursts.json.gz"):
                    runs.append((path.name, BURSTS_FILE.parse_text(gzip.decompress(path.read_bytes()).decode(),
                                                                   str(path))))
    return runs


def slowed(key: str, value: float, factor: float) -> float:
    power = resample.TIME_METRICS.get(key.split(".", 1)[1])
    return value if power is None else value * factor ** power


class Month:
    def __init__(self, pool: list[resample.Table], specs: dict, levels: dict[str, float], instances: int,
                 min_nights: int = DEFAULT_MIN_NIGHTS):
        self.pool, self.specs, self.levels, self.instances = pool, specs, levels, instances
        self.min_nights = min_nights
        # a night: one side of one instance pair, its mean per judged metric over the first
        # `bursts` measured bursts of each phase, as many as the shortest kept side has: the
        # kept A/As' designs ran 7-20 bursts a phase, and a phase's level moves along its
        # bursts (the table grows), so sides of different lengths are different measurements
        self.bursts = {phase: min(resample.phase_lengths(t)[phase] for t in pool)
                       for phase in resample.phase_lengths(pool[0])}
        self.sides = [{k: statistics.fmean(v[side][:self.bursts[k.split(".", 1)[0]]]) for k, v in t.items()
                       if k in specs} for t in pool for side in (0, 1)]
        self.priors = {k: runner_default_prior(k) for k in specs}

    def nights(self, rng: np.random.Generator, drift: float, step: float) -> list[dict[str, float]]:
        out, level = [], 0.0
        for n in range(HISTORY + LOOKS):
            level = drift * level + math.sqrt(1 - drift ** 2) * rng.normal(0, DRIFT_SD) if drift else 0.0
            factor = math.exp(level) * ((1 - step) if step and n >= HISTORY + LOOKS // 2 else 1.0)
            side = self.sides[int(rng.integers(len(self.sides)))]
            out.append({k: slowed(k, v, factor) for k, v in side.items()})
        return out

    def ab_alarm(self, rng: np.random.Generator, effect: float) -> bool:
        """One night's reference A/B of the server against itself (or slowed by `effect`)."""
        tables = [{k: (a, [slowed(k, x, 1 - effect) for x in b]) for k, (a, b) in self.pool[int(i)].items()
                   if k in self.specs} for i in rng.integers(0, len(self.pool), self.instances)]
        interim = interim_look(self.instances)
        looks = [(tables[:interim], self.levels["ab"] * INTERIM_SHARE),
                 (tables, self.levels["ab"] * (1 - INTERIM_SHARE))] if interim else [(tables, self.levels["ab"])]
        for look, alpha in looks:
            rows = judge_instances(look, self.specs, alpha=alpha, priors=self.priors)
            if any(r.verdict == Outcome.REGRESSION for r in rows if r.spec is not None):
                return True
        return False

    def run(self, rng: np.random.Generator, drift: float = 0.0, step: float = 0.0) -> Counter:
        nights = self.nights(rng, drift, step)
        m = len(self.specs)
        alarms: Counter = Counter()
        standing: list[set[str]] = []
        regressed: list[set[str]] = []
        told: set[tuple[str, str]] = set()
        records: list[HistoryRecord] = []
        for n, night in enumerate(nights):
            tonight_regressed: set[str] = set()
            looked = n >= HISTORY
            for key, spec in self.specs.items():
                baseline = [nights[j][key] for j in range(n - 1, -1, -1) if key not in standing[j]][:WINDOW]
                if len(baseline) < 2:
                    continue
                v = judge([night[key]], baseline, spec.direction, spec.tolerance, floor=spec.floor)  # as compare
                if v.verdict == Outcome.REGRESSION:
                    tonight_regressed.add(key)
                    streak = [night[key]]
                    for j in range(n - 1, -1, -1):
                        if key not in regressed[j]:
                            break
                        streak.insert(0, nights[j][key])
                    if looked and len(streak) >= self.min_nights:
                        # the gate as the nightly's: every night of the streak together against the baseline
                        p = estimate_p(ratio_interval(streak, baseline))
                        if t_tested(key) and p is not None and p <= self.levels["threshold"] / m:
                            alarms["threshold"] += 1
                            alarms[f"threshold {key}"] += 1
            regressed.append(tonight_regressed)
            records.append(HistoryRecord(result_id=f"n{n:02d}", scenario_hash="sha256:sim", metrics=night))
            called = set()
            if looked:
                for key, spec in self.specs.items():
                    for change in persisting_changes(records, key, spec, m, alpha=self.levels["change"]):
                        called.add(key)
                        if (key, change.location.result_id) not in told:
                            told.add((key, change.location.result_id))
                            alarms["change"] += 1
                            alarms[f"change {key}"] += 1
                if self.ab_alarm(rng, step if step and n >= HISTORY + LOOKS // 2 else 0.0):
                    alarms["ab"] += 1
            standing.append(tonight_regressed | called)
        return alarms



def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--levels", choices=["budget", "former"], default="budget")
    parser.add_argument("--drift", type=float, default=0.0)
    parser.add_argument("--step", type=float, default=0.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--min-nights", type=int, default=DEFAULT_MIN_NIGHTS,
                        help="the nights in a row a threshold regression no A/B confirmed needs (the nightly's)")
    parser.add_argument("--server", default="10.11", help="the kept A/As of this server version (prefix)")
    args = parser.parse_args()
    budget = IssueBudget()
    levels = {road: budget.level(road) for road in FORMER} if args.levels == "budget" else FORMER
    # one server's nights: another server's level is another case (MySQL's tps is not MariaDB's)
    kept = [(name, run) for name, run in kept_aas() if run.sides[0].full_version.startswith(args.server)]
    pool = resample.instance_pool([run for _, run in kept])
    scenario, _ = load_scenario(SCENARIO)
    judged = judged_specs(pool[0], resolve(scenario, "smoke").compare)
    # a key zero in some kept A/A (statement CPU before it was recorded, a counter that never
    # moves in a phase) has no night-to-night noise to draw there: left out, and said
    specs = {k: v for k, v in judged.items() if all(any(x > 0 for x in t[k][0]) for t in pool)}
    left_out = sorted(set(judged) - set(specs))
    sized = design.for_case(None, 2, len(specs) // 2, 2, alpha=levels["ab"])
    month = Month(pool, specs, levels, sized.instances, args.min_nights)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    with multiprocessing.Pool(args.jobs) as workers:
        per_seed = workers.starmap(month.run, [(np.random.default_rng(seed), args.drift, args.step)
                                               for seed in seeds])
    roads = ("ab", "change", "threshold")
    any_alarm = sum(1 for c in per_seed if any(c[road] for road in roads))
    low, high = clopper_pearson(any_alarm, args.seeds)
    what = ("no change" if not args.step else f"a {args.step:.0%} server slowdown from night {HISTORY + LOOKS // 2 + 1}")
    print(f"# A month of nightly looks, simulated ({what}"
          f"{f', nights drifting AR(1) {args.drift}' if args.drift else ''}; levels: {args.levels})\n")
    print(f"- {args.seeds} case-months (seeds {seeds[0]}-{seeds[-1]}): {HISTORY} nights of history, then {LOOKS} looked at; "
          f"{len(specs)} judged metrics of {SCENARIO} (smoke): {', '.join(sorted(specs))}")
    print(f"- nights drawn from {len(month.sides)} instance sides of {len(kept)} kept real A/As of server "
          f"{kept[0][1].sides[0].full_version} "
          f"({', '.join(sorted({name.split('-ab-')[1][:8] for name, _ in kept}))}); the A/B road: "
          f"{sized.instances} instance pairs a night (the sized design at its level), drawn whole from {len(pool)}; "
          f"a night is a side's mean over its first {', '.join(f'{n} {p}' for p, n in month.bursts.items())} "
          f"measured bursts (the shortest kept side's)")
    print(f"- levels per case and night: reference A/B {levels['ab']:.4%}, change points {levels['change']:.4%}, "
          f"thresholds {levels['threshold']:.4%}" + (f" (the default budget: {budget.false_issues:g} false issue a "
                                                     f"month over {budget.cases} cases, "
                                                     f"{budget.false_issues / budget.cases:.2f} per case-month)"
                                                     if args.levels == "budget" else " (no gate on thresholds)"))
    print(f"- a threshold regression no A/B confirmed: an alarm once it has stood {args.min_nights} nights in a row "
          f"(--min-nights {args.min_nights}; the nightly's default {DEFAULT_MIN_NIGHTS})")
    if left_out:
        print(f"- left out (zero in some kept A/A: no noise to draw): {', '.join(left_out)}")
    engine = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"- engine: `{engine}` (the judges of this checkout)")
    print("- assumes: nights exchangeable (no drift) unless --drift; a night's run as noisy as one A/A side\n")
    print("| road | alarms | per case-month | case-months with one |")
    print("|---|---|---|---|")
    for road in roads:
        total = sum(c[road] for c in per_seed)
        print(f"| {road} | {total} | {total / args.seeds:.3f} | {sum(1 for c in per_seed if c[road])} |")
    total = sum(c[road] for c in per_seed for road in roads)
    print(f"| all | {total} | {total / args.seeds:.3f} | {any_alarm} |")
    by_key = Counter()
    for c in per_seed:
        by_key.update({k: v for k, v in c.items() if k not in roads})
    if by_key:
        print("\nAlarms by road and metric (which noise the judges mis-model):\n")
        print("| road metric | alarms | case-months with one |")
        print("|---|---|---|")
        for key, count in by_key.most_common():
            print(f"| {key} | {count} | {sum(1 for c in per_seed if c[key])} |")
    print(f"\nCase-months with at least one alarm: {any_alarm} of {args.seeds} ({any_alarm / args.seeds:.1%}, "
          f"95 % interval {low:.1%}-{high:.1%}).")


if __name__ == "__main__":
    main()
