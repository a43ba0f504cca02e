"""The runner class's between-instance spread per judged metric, from the kept real A/As,
and what the priors perfci ships (judge/paired.py) do on the kept known-effect runs.

    python benchmarks/instance_priors.py > benchmarks/results/instance-priors-<date>.md

Prints, in Markdown:
- per judged key of the A/As (benchmarks/results/false-alarms.jsonl, effect 0): the
  between-instance sd (calibrate's estimator: instance pairs' mean log ratios less their
  within-instance variance, floored at 0), its degrees of freedom, the burst-block sd; and
  per metric the prior shipped, which must not be below the larger phase's measured value;
- every kept known-effect run (a CPU cost on side B: false-alarms.jsonl and sized-ab.jsonl)
  re-judged with one prior for every key (throughput's, as before) and with the shipped
  per-metric priors: which judged keys each flags. A work counter flagged there is a false
  attribution (the cause cannot change the work per transaction);
- the A/As re-judged with the shipped priors: family-wise false alarms.
Nothing is simulated: every number is a statistic or a count of kept real bursts. These are
the runs the priors were read from, so the A/A count is no validation (#35 asks for A/As run
after the engine is frozen).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from perfci.judge.burst_verdicts import instance_tables, judge_run, judged_specs  # noqa: E402
from perfci.judge.calibration import learn  # noqa: E402
from perfci.judge.paired import (  # noqa: E402
    RUNNER_DEFAULT_INSTANCE_DF,
    RUNNER_DEFAULT_INSTANCE_SD,
    default_priors,
    runner_default_prior,
)
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.metrics import presentation  # noqa: E402
from perfci.model.noise import InstancePrior  # noqa: E402

LOGS = ("benchmarks/results/false-alarms.jsonl", "benchmarks/results/sized-ab.jsonl")


def kept_runs() -> list[tuple[dict, InterleavedRun]]:
    out = []
    for log in LOGS:
        for line in (ROOT / log).read_text().splitlines():
            record = json.loads(line)
            path = ROOT / record["bursts_file"]
            if path.exists():
                out.append((record, BURSTS_FILE.parse_text(gzip.decompress(path.read_bytes()).decode(), str(path))))
    return out


def flagged(run: InterleavedRun, priors: dict[str, InstancePrior]) -> list[str]:
    return sorted(r.key for r in judge_run(run, [], 0.01, priors=priors) if r.verdict == "regression")


def main() -> None:
    runs = kept_runs()
    aas = [run for record, run in runs if record["effect"] == 0.0]
    effects = [(record, run) for record, run in runs if record["effect"] > 0]
    model = learn(aas, "kept A/As")
    keys = {k for run in aas for t in instance_tables(run) for k in t}
    judged = sorted(judged_specs({k: ([], []) for k in keys}, []))
    print("# Between-instance spread per judged metric, and the priors perfci ships\n")
    print(f"{len(aas)} kept real A/As of rebuild-after-delete (smoke, {sum(len(r.instances) for r in aas)} instance "
          f"pairs; {LOGS[0]}), {len(effects)} kept known-effect runs ({', '.join(LOGS)}).\n")
    print("| key | group | instance sd | df | burst-block sd | prior shipped |")
    print("|---|---|---|---|---|---|")
    for key in judged:
        m = model.metrics.get(key)
        prior = runner_default_prior(key)
        sd = "–" if m is None or m.instance_sd is None else f"{m.instance_sd:.2%}"
        print(f"| `{key}` | {presentation(key)[0]} | {sd} | {m.instance_df if m else 0} | "
              f"{m.block_sd:.1%} |" if m else f"| `{key}` | {presentation(key)[0]} | – | 0 | – |", end="")
        print(f" {prior.sd:.1%} ({prior.df} df) |")
        if m is not None and m.instance_sd is not None and m.instance_df >= 10:
            assert prior.sd >= m.instance_sd, f"{key}: the shipped prior {prior.sd} is below the measured {m.instance_sd}"
    one = {k: InstancePrior(RUNNER_DEFAULT_INSTANCE_SD, RUNNER_DEFAULT_INSTANCE_DF) for k in keys}
    print("\n## Known CPU-cost runs re-judged: one prior for every key vs the per-metric priors\n")
    print("| run | effect | flagged with one prior | flagged with the per-metric priors |")
    print("|---|---|---|---|")
    counters = {"one": 0, "per-metric": 0}
    for record, run in effects:
        keys_run = {k for t in instance_tables(run) for k in t}
        before = flagged(run, {k: one.get(k, one[next(iter(one))]) for k in keys_run})
        after = flagged(run, default_priors(keys_run))
        for name, found in (("one", before), ("per-metric", after)):
            counters[name] += sum(presentation(k)[0] == "work counters" for k in found)
        name = Path(record["bursts_file"]).name.removesuffix(".bursts.json.gz")
        print(f"| {name} | {record['effect']:.0%} | {', '.join(before) or '–'} | {', '.join(after) or '–'} |")
    print(f"\nWork counters flagged (false attributions: a CPU cost does not change the work per transaction): "
          f"{counters['one']} with one prior, {counters['per-metric']} with the per-metric priors.\n")
    alarms = sum(bool(flagged(run, default_priors({k for t in instance_tables(run) for k in t}))) for run in aas)
    print(f"A/As re-judged with the per-metric priors: {alarms} of {len(aas)} flag any judged key "
          "(the runs the priors were read from: no validation).")


if __name__ == "__main__":
    main()
