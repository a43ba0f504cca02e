"""The one Markdown table renderer."""

from perfci.model.verdicts import Outcome
from perfci.report.table import VERDICT_LABEL, table


def test_a_table_is_header_rule_and_rows_with_empty_cells_kept_narrow():
    assert table(["metric", "A", ""], [["`tps` ↑", 1.5, ""], ["x", "", "y"]]) == [
        "| metric | A | |", "|---|---|---|", "| `tps` ↑ | 1.5 | |", "| x | | y |"]


def test_every_outcome_has_one_label():
    assert set(VERDICT_LABEL) == set(Outcome)
    assert VERDICT_LABEL["regression"] == "🔴 regression"  # a plain string from a file finds its label


def test_every_change_is_written_one_way_b_against_a_in_percent_with_its_interval_and_its_direction():
    """One convention in every table: percent with a minus sign, the interval in percent,
    and which way that is for the metric (a faster metric is better, a longer latency
    worse); from 2x on, factors without an exponent; no interval where there is none."""
    from perfci.model.verdicts import Direction
    from perfci.report.table import change_cell

    assert change_cell(0.901, 0.822, 0.989, Direction.HIGHER) == "−9.9 % [−17.8, −1.1] worse"
    assert change_cell(1.110, 1.012, 1.217, Direction.LOWER) == "+11.0 % [+1.2, +21.7] worse"
    assert change_cell(1.05, 0.98, 1.12, Direction.HIGHER) == "+5.0 % [−2.0, +12.0] better"
    assert change_cell(534, 8.1, 35200, Direction.LOWER) == "×534 [×8.1, ×35,200] worse"
    assert change_cell(0.3, None, None, Direction.HIGHER) == "×0.3 worse"
    assert change_cell(1.0, 0.99, 1.01) == "+0.0 % [−1.0, +1.0]"


def test_a_verdict_says_which_way_an_undecided_change_went_and_a_point_rule_says_it_is_one():
    from perfci.model.verdicts import Direction
    from perfci.report.table import POINT_WITHIN, verdict_label

    assert verdict_label(Outcome.INCONCLUSIVE, 7.0, Direction.HIGHER) == "⚪ inconclusive (better)"
    assert verdict_label(Outcome.INCONCLUSIVE, 7.0, Direction.LOWER) == "⚪ inconclusive (worse)"
    assert verdict_label(Outcome.UNCHANGED, 1.0, Direction.HIGHER) == "unchanged"  # an A/B: the interval within
    assert verdict_label(Outcome.UNCHANGED, 1.0, Direction.HIGHER, point_only=True) == POINT_WITHIN


def test_queries_that_repeat_throughput_exactly_are_shown_once_and_a_different_one_stays():
    """One statement set per transaction: queries/s is throughput times a constant, the
    same change, interval and verdict; the A/B table shows throughput and names the
    repeat. A latency (its own interval) and another phase's queries/s stay."""
    from perfci.judge.paired import PairedEstimate, PairedVerdict
    from perfci.model.metrics import default_spec
    from perfci.report.interleaved import repeats

    def row(key: str, ratio: float, low: float, high: float) -> PairedVerdict:
        e = PairedEstimate(n_pairs=8, block=1, n_blocks=8, scale="log", ratio=ratio, low=low, high=high, p=0.001,
                           spread=0.02, lag1=0.0)
        return PairedVerdict(key, default_spec(key.split(".")[-1]), 1.0, ratio, e, 0.001, Outcome.REGRESSION)

    rows = [row("scan.qps", 0.9, 0.85, 0.95), row("scan.tps", 0.9, 0.85, 0.95), row("scan.latency_ms_avg", 1.11, 1.05, 1.18),
            row("point.qps", 0.9, 0.85, 0.95)]
    assert repeats(rows) == {"scan.qps": "scan.tps"}
