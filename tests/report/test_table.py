"""The one Markdown table renderer."""

from perfci.model.verdicts import Outcome
from perfci.report.table import VERDICT_LABEL, table


def test_a_table_is_header_rule_and_rows_with_empty_cells_kept_narrow():
    assert table(["metric", "A", ""], [["`tps` ↑", 1.5, ""], ["x", "", "y"]]) == [
        "| metric | A | |", "|---|---|---|", "| `tps` ↑ | 1.5 | |", "| x | | y |"]


def test_every_outcome_has_one_label():
    assert set(VERDICT_LABEL) == set(Outcome)
    assert VERDICT_LABEL["regression"] == "🔴 regression"  # a plain string from a file finds its label
