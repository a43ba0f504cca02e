"""`perfci dashboard`: a static site of the history (no server, no CDN).

index.html lists the cases that stand worse first, then every case (runner class /
server line / scenario / profile / case) with a sparkline and its status; <case>.html
leads with the last night against its baseline (worse rows first, with units), then
draws each judged metric over the nights, grouped (headline ratios, throughput, latency,
CPU, work counters) and labelled with its unit, as inline SVG (drawn here, so the page needs no chart library), its tolerance
band shaded (the y-axis spans at least twice the band: noise does not look like a step), with change
points (red, dashed), resets (green) and excluded samples (hollow) marked, server
versions (and a build's commit) on the axis where they change, each point linked to its
run and, for a build, to its upstream's commits since the night before, the nights a
reference A/B judged ringed (a confirmed one's ring opens its flame graph: the A/B's, which
the nightly keeps with the history and the site publishes, store/flame_files.py, listed
under the last night), and the last night against its baseline; a case of more
than ZOOM_NIGHTS nights also draws its recent nights on their own scale (the zoom). The
CSS and the little script (hover read-out, zoom, a brush over any nights, index filter)
ship in the wheel (perfci/report/dashboard_assets) and are copied next to the pages.
"""

from __future__ import annotations

import html
import re
import shutil
import statistics
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from perfci.judge.changes import CHANGE_ALPHA, Change, persisting_changes
from perfci.model.flavor import UPSTREAMS
from perfci.model.history import DEFAULT_HISTORY_WINDOW, CaseHistory, HistoryRecord
from perfci.model.metrics import DEFAULT_COMPARED, GROUPS, WORK_METRIC, MetricSpec, default_spec, presentation
from perfci.store import flame_files
from perfci.store.history_files import case_files, case_history
from perfci.util.files import write_atomic
from perfci.util.text import web_link

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 760, 220, 60, 20, 24, 46
SPARK_W, SPARK_H = 160, 28
ZOOM_NIGHTS = 14  # a case with more nights also draws its last 14 on their own scale
COMMIT_RE = re.compile(r"[0-9a-f]{7,40}")


def judged(records: list[HistoryRecord]) -> list[tuple[str, MetricSpec]]:
    """The metrics the default rules judge, in the order the history has them: a counted
    series' instructions per transaction alone (its times are the counter's)."""
    keys = dict.fromkeys(k for r in records for k in r.metrics)
    if any(r.measure == "work" for r in records):
        return [(k, default_spec(WORK_METRIC)) for k in keys if k.split(".", 1)[-1] == WORK_METRIC]
    return [(k, default_spec(k.rsplit(".", 1)[-1])) for k in keys
            if k.startswith("headline.") or k.split(".", 1)[-1] in DEFAULT_COMPARED]


@dataclass
class CasePage:
    hist: CaseHistory
    records: list[HistoryRecord]    # what the charts draw: the newest scenario hash, every night
    href: str                        # relative to the site root
    changes: dict[str, list[Change]]
    flames: dict[str, list[str]] = field(default_factory=dict)  # night -> its confirmed A/B's flame graphs (site root)

    def flame_href(self, path: str) -> str:
        """A flame graph's link from this page (they sit beside it: CASE.flames/NIGHT/NAME)."""
        return quote(str(Path(path).relative_to(Path(self.href).parent)))

    @property
    def title(self) -> str:
        return self.hist.key


def _scale(values: list[float], band: tuple[float, float] | None = None) -> tuple[float, float]:
    """The y-range: the values, and at least twice the tolerance band around its centre,
    so that a wobble well inside the tolerance never fills the chart like a step."""
    low, high = min(values), max(values)
    if band is not None:
        centre, width = (band[0] + band[1]) / 2, band[1] - band[0]
        low, high = min(low, centre - width), max(high, centre + width)
    pad = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
    return low - pad, high + pad


def tolerance_band(key: str, spec: MetricSpec, page: CasePage) -> tuple[float, float] | None:
    """± the metric's tolerance around the median of the nights that may be a baseline
    (not excluded, not regressed): the range a night may move without being flagged."""
    usable = [r.metrics[key] for r in page.records
              if key in r.metrics and r.result_id not in page.hist.excluded and key not in r.regressed]
    if not usable:
        return None
    centre = statistics.median(usable)
    return centre * (1 - spec.tolerance), centre * (1 + spec.tolerance)


def chart(key: str, page: CasePage, spec: MetricSpec | None = None, last: int | None = None) -> str:
    """One metric over the nights (the `last` ones only: a zoom) as an SVG, its
    tolerance band shaded, its unit on the y-axis."""
    points = [r for r in page.records if key in r.metrics][-last if last else 0:]
    if not points:
        return ""
    band = tolerance_band(key, spec, page) if spec is not None else None
    unit = presentation(key)[1]
    low, high = _scale([r.metrics[key] for r in points], band)
    n = len(points)
    x = lambda i: PAD_L + (W - PAD_L - PAD_R) * (i / max(n - 1, 1))  # noqa: E731
    y = lambda v: PAD_T + (H - PAD_T - PAD_B) * (1 - (v - low) / (high - low))  # noqa: E731
    out = [f'<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
           f'aria-label="{html.escape(key)} over {n} nights" data-metric="{html.escape(key)}">',
           f'<rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" height="{H - PAD_T - PAD_B}" class="plot"/>']
    if band is not None and spec is not None:
        out.append(f'<rect x="{PAD_L}" y="{y(band[1]):.1f}" width="{W - PAD_L - PAD_R}" '
                   f'height="{y(band[0]) - y(band[1]):.1f}" class="band"><title>tolerance ±{spec.tolerance:.0%} '
                   f'around the nights\' median {(band[0] + band[1]) / 2:.4g}</title></rect>')
    for v in (low + (high - low) * f for f in (0.1, 0.5, 0.9)):
        out.append(f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" class="tick" text-anchor="end">{v:.4g}</text>')
    if unit:
        mid = (PAD_T + H - PAD_B) / 2
        out.append(f'<text x="12" y="{mid:.1f}" class="unit" text-anchor="middle" '
                   f'transform="rotate(-90 12 {mid:.1f})">{html.escape(unit)}</text>')
    ids = [r.result_id for r in points]
    night = {r.result_id: i for i, r in enumerate(page.records)}  # a point's night on the page (the brush's unit)
    for reset in page.hist.resets:
        if reset.result_id in ids:
            i = ids.index(reset.result_id)
            out.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{PAD_T}" y2="{H - PAD_B}" class="reset"/>'
                       f'<text x="{x(i) + 3:.1f}" y="{PAD_T + 10}" class="reset-label">reset</text>')
    for change in page.changes.get(key, []):
        if change.location.result_id not in ids:
            continue  # before a zoom's window
        i = ids.index(change.location.result_id)
        out.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{PAD_T}" y2="{H - PAD_B}" class="change"/>'
                   f'<text x="{x(i) + 3:.1f}" y="{PAD_T + 22}" class="change-label">change {change.change_pct:+.1f} %</text>')
    previous = None
    for i, r in enumerate(points):  # server versions (and the commit a build was built from) where they change
        if server_label(r) != previous:
            out.append(f'<text x="{x(i):.1f}" y="{H - PAD_B + 28}" class="version">{html.escape(server_label(r))}</text>')
            previous = server_label(r)
        if i in (0, n - 1) or i % max(n // 6, 1) == 0:
            out.append(f'<text x="{x(i):.1f}" y="{H - PAD_B + 14}" class="tick" text-anchor="middle">'
                       f'{html.escape(r.date[5:10])}</text>')
    line = " ".join(f"{x(i):.1f},{y(r.metrics[key]):.1f}" for i, r in enumerate(points))
    out.append(f'<polyline points="{line}" class="series"/>')
    flavor = page.hist.key.split("/")[1].split("-", 1)[0]  # the case's server line: mariadb-10.11
    for i, r in enumerate(points):
        kind = "excluded" if r.result_id in page.hist.excluded else ("worse" if key in r.regressed else "point")
        ab = {"confirmed": " · its reference A/B confirmed it", "not-confirmed": " · its reference A/B did not"}
        label = f"{r.date[:10]} · {server_label(r)} · {r.result_id} · {r.metrics[key]:.4g}{ab.get(r.ab or '', '')}"
        compare = compare_url(flavor, points[i - 1].server_commit if i else None, r.server_commit)
        at = f'data-i="{night[r.result_id]}" data-v="{r.metrics[key]!r}"'
        flame = page.flame_href(page.flames[r.result_id][0]) if page.flames.get(r.result_id) else ""
        if r.ab:  # the nights a reference A/B judged: a ring (solid: confirmed, dashed: not); a confirmed
            # one's ring opens its flame graph (B against A)
            ring = f'<circle cx="{x(i):.1f}" cy="{y(r.metrics[key]):.1f}" r="7" class="ab-{r.ab}" {at}/>'
            out.append(f'<a href="{html.escape(flame)}" class="flame">{ring}</a>' if flame else ring)
        dot = (f'<circle cx="{x(i):.1f}" cy="{y(r.metrics[key]):.1f}" r="3.5" class="{kind}" {at} '
               f'data-label="{html.escape(label)}"' + (f' data-compare="{html.escape(compare)}"' if compare else "")
               + (f' data-flame="{html.escape(flame)}"' if flame else "")
               + f'><title>{html.escape(label)}</title></circle>')
        link = web_link(r.run_url)  # history lines are input: only http(s) links
        out.append(f'<a href="{html.escape(link)}">{dot}</a>' if link else dot)
    out.append("</svg>")
    return "".join(out)


def server_label(r: HistoryRecord) -> str:
    """A night's server on the axis: its version, and the commit a build: server was built from."""
    return (r.server_version or "?") + (f" @{r.server_commit[:7]}" if r.server_commit else "")


def compare_url(flavor: str, before: str | None, after: str | None) -> str:
    """The upstream's compare view of the commits between two nights' builds ("" when
    either night records no commit, they are the same, or the flavor has no known upstream)."""
    upstream = UPSTREAMS.get(flavor)
    if not (upstream and before and after and before != after and COMMIT_RE.fullmatch(before)
            and COMMIT_RE.fullmatch(after)):
        return ""
    return f"{upstream}/compare/{before}...{after}"


def sparkline(values: list[float]) -> str:
    if len(values) < 2:
        return ""
    low, high = _scale(values)
    pts = " ".join(f"{SPARK_W * i / (len(values) - 1):.1f},{SPARK_H * (1 - (v - low) / (high - low)):.1f}"
                   for i, v in enumerate(values))
    return (f'<svg class="spark" viewBox="0 0 {SPARK_W} {SPARK_H}" width="{SPARK_W}" height="{SPARK_H}">'
            f'<polyline points="{pts}"/></svg>')


def last_night_table(page: CasePage, window: int) -> str:
    """The newest night against the baseline the history gives it (what the nightly judged)."""
    last = page.records[-1]
    base = [r for r in page.hist.baseline_records(last.scenario_hash, window, skip=last.result_id)]
    rows = []
    for key, spec in sorted(judged(page.records), key=lambda ks: ks[0] not in last.regressed):
        if key not in last.metrics:
            continue
        values = [r.metrics[key] for r in base if key in r.metrics]
        mean = statistics.mean(values) if values else None
        change = f"{(last.metrics[key] / mean - 1) * 100:+.1f} %" if mean else "–"
        status = "worse" if key in last.regressed else "ok"
        rows.append(f"<tr class='{status}'><td><code>{html.escape(key)}</code> {'↑' if spec.direction == 'higher' else '↓'}"
                    f"</td><td>{html.escape(presentation(key)[1])}</td><td>{'–' if mean is None else f'{mean:.4g}'}</td>"
                    f"<td>{last.metrics[key]:.4g}</td><td>{change}</td><td>±{spec.tolerance:.0%}</td><td>{status}</td></tr>")
    return (f"<p>Night of {html.escape(last.date[:10])} (<code>{html.escape(last.result_id)}</code>, server "
            f"{html.escape(last.server_version or '?')}) against {len(base)} baseline night(s) from the history.</p>"
            "<table class='last' id='last-night'><tr><th>metric</th><th>unit</th><th>baseline mean</th><th>last night</th>"
            "<th>change</th>"
            "<th>tolerance</th><th>status</th></tr>" + "".join(rows) + "</table>")


def _document(title: str, depth: int, body: str) -> str:
    up = "../" * depth
    return (f"<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<link rel='icon' href='data:,'>"  # no favicon request (a 404 in the console)
            f"<link rel='stylesheet' href='{up}assets/style.css'></head><body>\n{body}\n"
            f"<script src='{up}assets/dashboard.js'></script></body></html>\n")


def case_html(page: CasePage, issues_url: str, window: int) -> str:
    depth = page.href.count("/")
    parts = [f"<p><a href='{'../' * depth}index.html'>all cases</a></p>", f"<h1>{html.escape(page.title)}</h1>",
             f"<p>{len(page.records)} nights · scenario hash <code>{html.escape(page.records[-1].scenario_hash[:19])}…"
             "</code></p>"]
    notes = [f"reset at <code>{html.escape(a.result_id)}</code> ({html.escape(a.date[:10])}): {html.escape(a.reason)}"
             for a in page.hist.resets]
    notes += [f"excluded <code>{html.escape(rid)}</code>: {html.escape(a.reason)}" for rid, a in page.hist.excluded.items()
              if any(r.result_id == rid for r in page.records)]
    if notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>")
    if issues_url:
        parts.append(f"<p><a href='{html.escape(issues_url)}'>regression issues</a></p>")
    parts += ["<h2>Last night against its baseline</h2>", last_night_table(page, window)]
    if page.flames:
        parts += ["<h2>Why: flame graphs of confirmed regressions</h2>", flame_list(page)]
    parts += ["<h2>Metrics over the nights</h2>",
              "<p class='legend'><span class='k change'>change point</span> <span class='k reset'>reset</span> "
              "<span class='k worse'>worse than its baseline</span> <span class='k excluded'>excluded</span> "
              "<span class='k ab'>ring: a reference A/B judged the night (dashed: it did not confirm)</span></p>",
              "<p class='brush-help'>Drag across a chart to zoom every chart to those nights "
              "(<code>#nights=A-B</code> links to it); <button type='button' id='unzoom' hidden>show all nights</button>"
              "</p>"]
    zoom = len(page.records) > ZOOM_NIGHTS
    if zoom:  # the recent nights drawn on their own scale: a zoom without a chart library
        parts.append(f"<p class='zoom'>show: <button type='button' data-zoom='all' aria-pressed='true'>all "
                     f"{len(page.records)} nights</button> <button type='button' data-zoom='recent' aria-pressed='false'>"
                     f"the last {ZOOM_NIGHTS}</button></p>")
    parts.append("<div id='readout' class='readout'>hover a point</div>")
    by_group: dict[str, list[tuple[str, MetricSpec]]] = {}
    for key, spec in judged(page.records):
        by_group.setdefault(presentation(key)[0], []).append((key, spec))
    for group in GROUPS:
        if group not in by_group:
            continue
        parts.append(f"<section class='group' data-group='{html.escape(group)}'><h3>{html.escape(group)}</h3>")
        # within a group, metrics with a change point first: what the reader came for is at the top
        for key, spec in sorted(by_group[group], key=lambda ks: not page.changes.get(ks[0])):
            recent = f"<div class='zoom-recent' hidden>{chart(key, page, spec, ZOOM_NIGHTS)}</div>" if zoom else ""
            unit = presentation(key)[1]
            parts.append(f"<figure><figcaption><code>{html.escape(key)}</code>{' · ' + html.escape(unit) if unit else ''}"
                         f"</figcaption><div class='zoom-all'>{chart(key, page, spec)}</div>{recent}</figure>")
        parts.append("</section>")
    return _document(page.title, depth, "\n".join(parts))


def flame_list(page: CasePage) -> str:
    """Each night whose reference A/B confirmed a regression, newest first, with the A/B's
    flame graphs: B against A per phase (red grew), then each side's."""
    dated = {r.result_id: r for r in page.hist.records}
    items = []
    for night in sorted(page.flames, key=lambda n: dated[n].date if n in dated else "", reverse=True):
        r = dated.get(night)
        when = f"{html.escape(r.date[:10])} · {html.escape(server_label(r))} · " if r else ""
        links = " · ".join(f"<a href='{html.escape(page.flame_href(path))}'>{html.escape(flame_title(path))}</a>"
                           for path in page.flames[night])
        items.append(f"<li>{when}<code>{html.escape(night)}</code>: {links}</li>")
    return "<ul class='flames' id='flames'>" + "".join(items) + "</ul>"


def flame_title(path: str) -> str:
    """PHASE-diff.svg -> "PHASE: B against A"; PHASE-a.svg -> "PHASE: A"."""
    stem = Path(path).stem
    phase, _, side = stem.rpartition("-")
    return f"{phase}: B against A" if side == "diff" else f"{phase}: {side.upper()}" if phase else stem


def index_html(pages: list[CasePage]) -> str:
    """Cases that stand worse (a change point, or last night worse) first, in their own
    table: what someone opening the dashboard came for; then every case."""
    standing, rows = [], []
    for p in pages:
        last = p.records[-1]
        changed = sorted(k for k, v in p.changes.items() if v)
        status = f"change point: {', '.join(changed)}" if changed else ("worse last night" if last.regressed else "ok")
        tps = next((k for k, _ in judged(p.records) if k.endswith(".tps")), None)
        spark = sparkline([r.metrics[tps] for r in p.records if tps in r.metrics]) if tps else ""
        bad = bool(changed or last.regressed)
        row = (f"<tr class='{'bad' if bad else 'ok'}'><td><a href='{html.escape(p.href)}'>"
               f"{html.escape(p.title)}</a></td><td>{len(p.records)}</td><td>{html.escape(last.date[:10])}</td>"
               f"<td>{html.escape(last.server_version or '?')}</td><td>{spark}<small>{html.escape(tps or '')}</small></td>"
               f"<td>{html.escape(status)}</td></tr>")
        rows.append(row)
        if bad:
            standing.append(row)
    head = ("<tr><th>runner class / server / scenario / profile / case</th><th>nights</th>"
            "<th>last</th><th>server</th><th>throughput</th><th>status</th></tr>")
    worse = (f"<h2>Standing worse ({len(standing)})</h2><table id='standing'>{head}{''.join(standing)}</table>"
             if standing else "<h2>Standing worse (0)</h2><p id='standing'>No case stands worse tonight.</p>")
    body = ("<h1>perfci: nightly history</h1>" + worse + "<h2>All cases</h2>"
            "<p><input id='filter' placeholder='filter cases' aria-label='filter cases'></p>"
            f"<table id='cases'>{head}" + "".join(rows) + "</table>")
    return _document("perfci: nightly history", 0, body)


def build(history_root: Path, out: Path, repo_url: str = "", window: int = DEFAULT_HISTORY_WINDOW,
          change_alpha: float = CHANGE_ALPHA) -> list[Path]:
    """Write the site; returns the pages written (index first). `change_alpha`: the change
    points' level per case and night (the nightly's, from its false-issue budget)."""
    pages = []
    for path in case_files(history_root):
        hist = case_history(history_root, path)
        usable = hist.usable()
        if not usable:
            continue
        records = [r for r in hist.records if r.scenario_hash == usable[-1].scenario_hash]
        keys = judged(records)
        changes = {key: persisting_changes(hist.usable(), key, spec, len(keys), alpha=change_alpha) for key, spec in keys}
        pages.append(CasePage(hist, records, f"{hist.key}.html", changes, flame_files.kept(history_root, hist.key)))
    out = Path(out)
    for page in pages:  # the flame graphs go out with the site, at the path they have in the history
        for kept in (p for paths in page.flames.values() for p in paths):
            (out / kept).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(history_root) / kept, out / kept)
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ("style.css", "dashboard.js"):
        with resources.as_file(resources.files("perfci.report") / "dashboard_assets" / name) as src:
            shutil.copyfile(src, assets / name)
    written = [out / "index.html"]
    write_atomic(written[0], index_html(pages))
    for page in pages:
        issues = (f"{repo_url.rstrip('/')}/issues?q=" + quote(f'is:issue label:perf-regression "{page.hist.key.split("/")[2]}"')
                  if repo_url else "")
        target = out / page.href
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, case_html(page, issues, window))
        written.append(target)
    return written
