"""One judged metric of an interleaved A/B as files keep it (confirmations, sweeps)."""

from __future__ import annotations

from perfci.model.base import StrictModel


class AbRatio(StrictModel):
    """One judged metric of the reference A/B: means, B/A with the decision's interval,
    the run's MDE and the verdict."""
    a: float
    b: float
    ratio: float
    low: float
    high: float
    confidence: float
    mde: float | None = None
    verdict: str
