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
import sys
from pathlib import Path

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
        sized = [m["mde"] for m in verdict["metrics"] if m.get("judged") and m.get("mde") is not None
                 and m["key"].split(".", 1)[1] in SIZED]
        if not sized:
            continue
        pilot = size.get("pilot")
        planned = pilot["mde"] if pilot else size["mde"]
        run = runs.get(path.stem, {})
        out.append({"id": path.stem, "engine": run.get("engine", "?")[:12], "planned_before": size["mde"],
                    "pilot": pilot, "planned": planned, "realised": max(sized), "wall_s": run.get("wall_s"),
                    "budget_s": size["budget_minutes"] * 60, "exit": run.get("exit")})
    return out


def main() -> None:
    found = [r for arg in sys.argv[1:] for r in rows(Path(arg))]
    print("# Realised against planned MDE, sized A/As\n")
    print("| A/A | engine | planned before it ran | internal pilot | planned | realised | realised / planned "
          "| wall / budget | exit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in found:
        p = r["pilot"]
        pilot = (f"block sd {p['block_sd']:.1%} (assumed {p['planned_block_sd']:.1%}), {p['planned']} -> "
                 f"{p['instances']} pairs" if p else "—")
        wall = f"{r['wall_s'] / r['budget_s']:.0%}" if r["wall_s"] else "?"
        print(f"| {r['id']} | `{r['engine']}` | {r['planned_before']:.1%} | {pilot} | {r['planned']:.1%} | "
              f"{r['realised']:.1%} | {r['realised'] / r['planned']:.2f} | {wall} | {r['exit']} |")
    close = sum(abs(r["realised"] / r["planned"] - 1) <= WITHIN for r in found)
    in_time = sum(bool(r["wall_s"]) and r["wall_s"] <= r["budget_s"] for r in found)
    print(f"\nWithin ±{WITHIN:.0%} of plan: {close} of {len(found)}; within the budget's wall time: {in_time} of "
          f"{len(found)}.")


if __name__ == "__main__":
    main()
