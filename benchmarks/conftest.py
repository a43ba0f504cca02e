"""Shared setup for perfci's own speed benchmarks (pytest-benchmark)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "ci"), str(ROOT / "tests")]  # the checkout's perfci and the test factories
