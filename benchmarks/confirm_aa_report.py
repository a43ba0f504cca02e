"""#55's "≥ 20 real A/As run the way the nightly runs its reference A/B, end to end
through `perfci confirm`, 0 false issues": the A/As of benchmarks/confirm-aa.sh read back
from what they kept (runs.jsonl, each A/A's typed confirmation and the nightly's issues).

    python benchmarks/confirm_aa_report.py benchmarks/results/confirm-aa/<dir> [...] > report.md

Per A/A: the two specs of the one server, the phases its reference A/B ran (of how many),
its status (every "confirmed" is a false one), what it flagged, the issues the nightly
wrote with that confirmation (every one false), the MDE planned and realised, and the
confirm's wall time against the A/B's budget. Then the counts, each false count with its
exact 95 % interval. Nothing is simulated: every number is a value of a kept real run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from false_alarms import clopper_pearson  # the one exact interval of benchmarks/
from realised_mde import judged_by_chance, pilot_said, planned_and_realised


def rows(kept: Path) -> list[dict]:
    out = []
    log = kept / "runs.jsonl"
    for line in log.read_text().splitlines() if log.is_file() else []:
        run = json.loads(line)
        confirmations = [json.loads(p.read_text()) for p in sorted((kept / "aa" / run["id"] / "confirm").glob(
            "*.confirmation.json"))]
        for c in confirmations or [{}]:
            size = c.get("size")
            mde = planned_and_realised(size, {k: r.get("mde") for k, r in c.get("ratios", {}).items()}) \
                if size else None
            phases = c.get("phases")
            out.append({**run, "status": c.get("status", "none"), "flagged": c.get("ab_regressions", []),
                        "phases": f"{', '.join(phases['run'])} of {phases['of']}" if phases else "all",
                        "mde": mde})
    return out


def main() -> None:
    found = [r for arg in sys.argv[1:] for r in rows(Path(arg))]
    print("# A/As through `perfci confirm` and `perfci nightly`\n")
    print("| A/A | engine | A | B | phases | status | flagged | issues | planned | internal pilot | realised "
          "| realised / planned | confirm wall / budget | exits (confirm, nightly) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in found:
        m = r["mde"]
        mde = (f"{m['planned']:.1%} | {pilot_said(m['pilot'])} | {m['realised']:.1%} | "
               f"{m['realised'] / m['planned']:.2f} | {r['confirm_s'] / m['budget_s']:.0%}") if m else "— | — | — | — | —"
        print(f"| {r['id']} | `{r['engine'][:12]}` | `{r['a']}` | `{r['b']}` | {r['phases']} | {r['status']} | "
              f"{', '.join(r['flagged']) or '—'} | {r['issues']} | {mde} | {r['confirm']}, {r['nightly']} |")
    ran = [r for r in found if r["status"] in ("confirmed", "not-confirmed")]
    false_confirmed = sum(r["status"] == "confirmed" for r in ran)
    with_issue = sum(r["issues"] > 0 for r in found)
    print()
    for what, k, n in (("reference A/Bs that confirmed a regression (false)", false_confirmed, len(ran)),
                       ("A/As whose night wrote an issue (false)", with_issue, len(found))):
        low, high = clopper_pearson(k, n) if n else (0.0, 1.0)
        print(f"- {what}: {k} of {n} (95 % interval {low:.1%}-{high:.1%})")
    sized = [r for r in found if r["mde"]]
    in_time = sum(r["confirm_s"] <= r["mde"]["budget_s"] for r in sized)
    print(f"- {judged_by_chance([r['mde'] for r in sized])}; the confirm within its A/B's budget: {in_time} of "
          f"{len(sized)}")

if __name__ == "__main__":
    main()
