"""util/text.py: stored Markdown shown in issues and PR comments stays inert, except a
report's own folded sections."""

from __future__ import annotations

from perfci.util.text import inert_markdown


def test_a_reports_folded_sections_survive_and_nothing_else_of_html_does():
    report = ("**Regression** in 1 of 4\n\n<details><summary>3 judged metrics unchanged (within the tolerance)"
              "</summary>\n\n| `only.qps` ↑ | 1 | 1 |\n\n</details>\n")
    assert inert_markdown(report) == report
    hostile = ("<img src=x onerror=alert(1)> <details><summary>inline</summary> @team\n"
               "<details><summary>a <b>bold</b> summary</summary>\n<!-- perfci-pr-comment -->\n![i](http://x/y.png)")
    out = inert_markdown(hostile)
    assert "<img" not in out and "<b>" not in out and "<!--" not in out and "![" not in out
    assert "<details><summary>inline" not in out  # only alone on its line; markup in a summary stays escaped
    assert "<details><summary>a &lt;b&gt;bold&lt;/b&gt; summary</summary>" in out
    assert "@\u200bteam" in out or "@team" not in out
