"""`perfci baseline diff` as Markdown: one verdict line, then per changed case the
thresholds that moved (one run flagged beyond X, before -> after), and per changed
noise model its tolerances and smallest detectable effects. The PR comment shows it."""

from __future__ import annotations

from perfci.judge.thresholds import BaselinesDiff, CaseDiff, NoiseDiff, NoiseLine, Threshold
from perfci.report.table import table
from perfci.util.text import code_span

MOVED = 0.001  # a threshold that moved less than 0.1 % of the mean is shown as unmoved


def _num(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1000 else f"{x:,.0f}"  # 0.2358, 903.2, 10,120


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1%}"


def _flagged(t: Threshold | None) -> str:
    if t is None:
        return "–"
    if t.flagged_at is None:
        return "never (one run cannot be judged)"
    return f"{_num(t.flagged_at)} ({_pct(t.flagged_change)})"


def _arrow(before: str, after: str) -> str:
    return before if before == after else f"{before} → {after}"


def _moved(b: Threshold | None, a: Threshold | None) -> bool:
    if b is None or a is None:
        return True
    if (b.flagged_at is None) != (a.flagged_at is None) or b.tolerance != a.tolerance:
        return True
    return b.flagged_at is not None and a.flagged_at is not None and abs(a.flagged_at - b.flagged_at) > MOVED * b.mean


def case_rows(d: CaseDiff) -> tuple[list[list[str]], int]:
    """Table rows of one case (moved metrics first) and how many thresholds moved."""
    before = {t.key: t for t in d.before or []}
    after = {t.key: t for t in d.after or []}
    rows, moved = [], 0
    for key in sorted(before.keys() | after.keys(), key=lambda k: (not _moved(before.get(k), after.get(k)), k)):
        b, a = before.get(key), after.get(key)
        moved += _moved(b, a)
        rows.append([code_span(key), _arrow(str(b.samples) if b else "–", str(a.samples) if a else "–"),
                     _arrow(_num(b.mean) if b else "–", _num(a.mean) if a else "–"),
                     _arrow(f"{b.tolerance:.1%}" if b else "–", f"{a.tolerance:.1%}" if a else "–"),
                     _arrow(_flagged(b), _flagged(a))])
    return rows, moved


def _noise_cells(n: NoiseLine | None) -> list[str]:
    if n is None:
        return ["–"] * 4
    pct = [None if v is None else f"{v:.1%}" for v in (n.run_cv, n.tolerance, n.nightly_mde, n.block_sd)]
    return [v or "–" for v in pct]


def noise_rows(d: NoiseDiff) -> list[list[str]]:
    before = {n.key: n for n in d.before or []}
    after = {n.key: n for n in d.after or []}
    rows = []
    for key in sorted(before.keys() | after.keys()):
        b, a = _noise_cells(before.get(key)), _noise_cells(after.get(key))
        if b != a:
            rows.append([code_span(key), *(_arrow(x, y) for x, y in zip(b, a, strict=True))])
    return rows


def _state(before: object | None, after: object | None) -> str:
    return "added" if before is None else "deleted" if after is None else "changed"


def diff_markdown(d: BaselinesDiff) -> str:
    if d.empty:
        return "**Baselines unchanged**: no pinned baseline or noise model differs.\n"
    sections, moved_total = [], 0
    for case in d.cases:
        rows, moved = case_rows(case)
        moved_total += moved
        sections += ["", f"#### {code_span(case.path)} ({_state(case.before, case.after)})", "",
                     *table(["metric", "samples", "mean", "tolerance", "one run flagged beyond"], rows)]
    for model in d.models:
        rows = noise_rows(model)
        sections += ["", f"#### noise model {code_span(model.path)} ({_state(model.before, model.after)})", ""]
        sections += table(["metric", "run-to-run CV", "tolerance", "nightly MDE", "A/B block sd"], rows) if rows \
            else ["(no metric's noise changed)"]
    head = (f"**Baseline edit**: {len(d.cases)} pinned baseline(s), {len(d.models)} noise model(s) changed; "
            f"{moved_total} threshold(s) moved (a night is judged against the new ones once this merges).")
    return "\n".join([head, *sections]) + "\n"
