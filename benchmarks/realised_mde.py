"""#55's "realised MDE within ±15 % of plan": the sized A/As of benchmarks/aa-campaign.sh
read back from their typed verdicts (perfci.ab-verdict/2, whose `size` says what was
planned and what the internal pilot re-planned).

    python benchmarks/realised_mde.py benchmarks/results/aa-campaign/<day> [...] > report.md

Per A/A: the MDE planned before it ran, the pilot's (what it measured and re-planned, if
it did), the realised MDE (the worst sized metric's achieved MDE: throughput of each
phase, as sizing takes it), realised over planned, and the wall time against the budget.
Nothing is simulated: every number is a value of a kept real run.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats

SIZED = ("tps",)  # qps repeats tps's test (one test per identical series)
WITHIN = 0.15     # the issue's ±15 %


def rows(day: Path) -> list[dict]:
    runs = {}
    log = day / "runs.jsonl"
    for line in log.read_text().splitlines() if log.is_file() else []:
        record = json.loads(line)
        runs[record["id"]] = record
    out = []
    for path in sorted(day.glob("*.json")):
        verdict = json.loads(path.read_text())
        size = verdict.get("size")
        if verdict.get("schema") != "perfci.ab-verdict/2" or not size:
            continue
        found = planned_and_realised(size, {m["key"]: m.get("mde") for m in verdict["metrics"] if m.get("judged")})
        if found is None:
            continue
        run = runs.get(path.stem, {})
        out.append({"id": path.stem, "engine": run.get("engine", "?")[:12], **found, "wall_s": run.get("wall_s"),
                    "exit": run.get("exit")})
    return out


def planned_and_realised(size: dict, mdes: dict[str, float | None]) -> dict | None:
    """What a sized A/B planned to see (after its internal pilot, if that re-planned) and
    what it realised: the worst sized metric's achieved MDE (throughput of each phase, as
    sizing takes it). `size`: a typed Sizing as JSON; `mdes`: judged key -> achieved MDE.
    None when no sized metric has an MDE."""
    sized = [mde for key, mde in mdes.items() if mde is not None and key.split(".", 1)[1] in SIZED]
    if not sized:
        return None
    pilot = size.get("pilot")
    instances = pilot["instances"] if pilot else size["instances"]
    return {"planned_before": size["mde"], "pilot": pilot, "planned": pilot["mde"] if pilot else size["mde"],
            "realised": max(sized), "budget_s": size["budget_minutes"] * 60, "instances": instances}


def pilot_said(pilot: dict | None) -> str:
    return (f"block sd {pilot['block_sd']:.1%} (assumed {pilot['planned_block_sd']:.1%}), {pilot['planned']} -> "
            f"{pilot['instances']} pairs" if pilot else "—")


def chance_band(instances: int, share: float = 0.8) -> tuple[float, float]:
    """Where realised / planned falls in `share` of A/As when the plan's noise is exactly
    right: the realised MDE scales with the sd the run estimates from its K instance
    pairs' centres (K - 1 df), whose ratio to the true sd is sqrt(chi2(K-1) / (K-1))
    (the t quantile's own change with the estimate is left out). At K = 12 its central
    80 % is 0.71-1.25, so "within ±15 % of plan" holds for about half of A/As planned
    perfectly: ±15 % in 80 % needs ~36 df."""
    df = max(instances - 1, 1)
    tail = (1 - share) / 2
    return math.sqrt(stats.chi2.ppf(tail, df) / df), math.sqrt(stats.chi2.ppf(1 - tail, df) / df)


def judged_by_chance(found: list[dict]) -> str:
    """The summary line both reports print: realised against planned, the issue's ±15 %
    and the band chance alone allows."""
    if not found:
        return "no sized A/A"
    ratios = sorted(r["realised"] / r["planned"] for r in found)
    close = sum(abs(x - 1) <= WITHIN for x in ratios)
    banded = sum(lo <= r["realised"] / r["planned"] <= hi for r in found for lo, hi in [chance_band(r["instances"])])
    return (f"realised / planned: median {statistics.median(ratios):.2f} of {len(found)}; within ±{WITHIN:.0%} of "
            f"plan: {close} of {len(found)} (a perfect plan: about half, chance_band); within the central 80 % "
            f"chance allows a perfect plan at its instance pairs: {banded} of {len(found)}")


def main() -> None:
    found = [r for arg in sys.argv[1:] for r in rows(Path(arg))]
    print("# Realised against planned MDE, sized A/As\n")
    print("| A/A | engine | planned before it ran | internal pilot | planned | realised | realised / planned "
          "| wall / budget | exit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in found:
        wall = f"{r['wall_s'] / r['budget_s']:.0%}" if r["wall_s"] else "?"
        print(f"| {r['id']} | `{r['engine']}` | {r['planned_before']:.1%} | {pilot_said(r['pilot'])} | "
              f"{r['planned']:.1%} | {r['realised']:.1%} | {r['realised'] / r['planned']:.2f} | {wall} | {r['exit']} |")
    in_time = sum(bool(r["wall_s"]) and r["wall_s"] <= r["budget_s"] for r in found)
    print(f"\n{judged_by_chance(found)}; within the budget's wall time: {in_time} of {len(found)}.")


if __name__ == "__main__":
    main()
