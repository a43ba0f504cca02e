"""The level grid of tests/judge/test_level.py as a table: per K, prior, instance sd and
burst noise, the worst ratio of false "worse" to its nominal share over the three levels.

    python benchmarks/level_grid.py > benchmarks/results/level-grid-<date>.md
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests/judge"))

from test_level import (  # noqa: E402
    BLOCK_SDS,
    BLOCKS,
    DEFAULT,
    INSTANCE_SDS,
    LEARNED_ZERO,
    LEVELS,
    TRIALS,
    false_worse,
)

from perfci.judge.paired import learned_prior  # noqa: E402

print("# The A/B's level over a grid of instance spreads (simulated, the verdict's centre test)\n")
print(f"{TRIALS:,} simulated A/As per cell, {BLOCKS} two-pair blocks per instance pair; each cell: the worst "
      f"over the levels {', '.join(f'{x:.1%}' for x in LEVELS)} (two-sided) of the one-sided false \"worse\" "
      "rate over its nominal share (1.00: exact). Assumes normal, independent instance offsets and blocks.\n")
for k in (3, 4, 9):
    for name, prior in (("runner default 1.5 %, 4 df", DEFAULT),
                        ("learned 0 with 49 df, floored", learned_prior(LEARNED_ZERO, DEFAULT)),
                        ("learned 0 with 49 df, not floored", LEARNED_ZERO)):
        print(f"## K = {k}, prior {name}\n")
        print("| instance sd | " + " | ".join(f"burst noise {b:.0%}" for b in BLOCK_SDS) + " |")
        print("|---|" + "---|" * len(BLOCK_SDS))
        for i, sd in enumerate(INSTANCE_SDS):
            cells = [max(false_worse(k, sd, b, prior, seed=100 * k + 10 * i + j).values()) for j, b in enumerate(BLOCK_SDS)]
            print(f"| {sd:.1%} | " + " | ".join(f"{c:.2f}" + (" **over 1.2**" if c > 1.2 else "") for c in cells) + " |")
        print()
