"""The dashboard's drawing rules that need no browser (the pages themselves:
test_e2e_dashboard.py)."""

from __future__ import annotations

from perfci.report.dashboard_site import _scale


def test_noise_inside_the_tolerance_never_fills_a_chart():
    """A 1 % wobble under a ±5 % band takes at most a tenth of the y-axis: no fake step."""
    low, high = _scale([99.5, 100.5, 99.5, 100.5], band=(95.0, 105.0))
    assert (100.5 - 99.5) / (high - low) <= 0.1 and low < 95 and high > 105
    low, high = _scale([80.0, 100.0], band=(95.0, 105.0))  # a real step is still drawn in full
    assert low < 80 and high > 105
