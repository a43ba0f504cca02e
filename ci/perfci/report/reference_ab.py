"""The reference A/B's part of an issue body (model/confirmation.py)."""

from __future__ import annotations

from perfci.model.confirmation import Confirmation
from perfci.util.text import code_span, inert_markdown, markdown


def markdown_section(c: Confirmation) -> list[str]:
    """The reference A/B's part of an issue body."""
    status = {"confirmed": "**confirmed**", "not-confirmed": "not confirmed", "not-run": "not run"}[c.status]
    why = {"regression": "tonight regressed against its baseline",
           "server-changed": "tonight's server or config is not the reference's"}[c.trigger]
    lines = ["", "### A/B against the reference (same runner, both servers alive, interleaved bursts)", "",
             f"- {status}: {markdown(c.reason)} (run because {why})"]  # a confirmation file is input: escaped
    if c.a:
        lines.append(f"- A, reference: {code_span(c.a)} · B, tonight: {code_span(c.b)} · profile {code_span(c.profile)}")
    if c.phases:
        lines.append(f"- phases: {markdown(c.phases.said())}")
    if c.sizing:
        lines.append(f"- sized: {markdown(c.sizing)}")
    if c.why:  # why it got slower, unfolded (the explain pass, or the counted Why)
        lines += ["", "#### Why: " + inert_markdown(c.why)]
    if c.report:
        lines += ["", "<details><summary>The A/B's report</summary>", "", inert_markdown(c.report.strip()), "",
                  "</details>"]
    return lines
