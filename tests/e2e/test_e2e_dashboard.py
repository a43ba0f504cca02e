"""The dashboard in a real browser: a simulated month (simulated_month.py) through
the nightly loop (issues written as files), `perfci dashboard` through the CLI, and
headless Chromium loading the pages from disk: no console message of any kind (script
errors, failed loads), the script ran and found every chart, the case page leads with
the last night's table and labels every chart with its unit, grouped, the zoom (#recent)
shows the recent nights, the brush's zoom (#nights=A-B) draws those nights only, the
server commit on the axis with its compare link, the flame graph of the night a reference
A/B confirmed (drawn by inferno) opens from its link, and a screenshot of the case with the
step, kept under test-artifacts/, shows the change-point mark."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from perfci.alert.nightly import NightOptions, run_night
from perfci.model.confirmation import Confirmation
from perfci.model.result import Result
from perfci.report.flamegraphs import differential, flamegraph
from perfci.store.history_files import exclude

from conftest import REPO, run_perfci
from simulated_month import SPIKE_NIGHT, STEP_NIGHT, month

pytestmark = pytest.mark.e2e
CHANGE_RGB = (0xD6, 0x27, 0x28)   # style.css: svg .change
ARTIFACTS = REPO / "test-artifacts"


def chromium(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is needed: apt-get install chromium (scripts/install-deps does)"
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
                           "--no-first-run", "--disable-extensions", *args], capture_output=True, text=True, timeout=120)


def console_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def confirmed_with_flames(result_id: str, confirm: Path) -> Confirmation:
    """The step night's reference A/B, confirmed, with its flame graphs drawn by inferno
    from folded stacks (B spends more in a scan), as an explain pass leaves them."""
    explain = confirm / "ab.explain"
    explain.mkdir(parents=True)
    stacks = {"a": "do_command;mysql_execute_command;row_search_mvcc 700\ndo_command;net_read 300\n",
              "b": "do_command;mysql_execute_command;row_search_mvcc 900\ndo_command;net_read 300\n"}
    for side, text in stacks.items():
        (explain / f"after-{side}.folded").write_text(text)
        flamegraph(explain / f"after-{side}.folded", explain / f"after-{side}.svg", f"after: {side.upper()}")
    differential(explain / "after-a.folded", explain / "after-b.folded", explain / "after-diff.svg",
                 "after: B against A")
    return Confirmation(result_id=result_id, case="default", status="confirmed", reason="the A/B flags after.tps",
                        nightly_regressions=["after.tps"], ab_regressions=["after.tps"], profile="smoke",
                        flamegraphs=[f"ab.explain/after-{s}.svg" for s in ("a", "b", "diff")])


WEEKLY_COMMITS = ["1a2b3c4d5e6f" * 3 + "1a2b", "2b3c4d5e6f70" * 3 + "2b3c", "3c4d5e6f7081" * 3 + "3c4d",
                  "4d5e6f708192" * 3 + "4d5e", "5e6f708192a3" * 3 + "5e6f"]


def built_from(result: Result, commit: str) -> Result:
    """The night's server as a build of `commit` (a build: line moves a commit a week)."""
    data = result.dump()
    data["server"]["commit"] = commit
    return Result.model_validate(data)


def test_the_dashboard_draws_the_month_in_chromium_without_console_errors(tmp_path):
    history, confirm = tmp_path / "history", tmp_path / "confirm"
    for night, results in enumerate(month(), start=1):
        results = [built_from(r, WEEKLY_COMMITS[(night - 1) // 7]) for r in results]
        step = {r.id: confirmed_with_flames(r.id, confirm) for r in results if night == STEP_NIGHT
                and r.case == "default"}
        run_night(results, NightOptions(history_root=history, confirmations_dir=confirm),
                  dry_run_dir=tmp_path / "issues", confirmations=step)
    exclude(history, f"month-default-night{SPIKE_NIGHT:02d}", "host was busy (the spike)")
    site = tmp_path / "site"
    proc = run_perfci("dashboard", str(history), "--out", str(site))
    assert proc.returncode == 0, proc.stderr
    case_page = site / "epyc-nvme/mariadb-10.11/tiny/smoke/default.html"
    for page in (site / "index.html", case_page):
        dom = chromium("--dump-dom", page.as_uri())
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert console_lines(dom) == [], console_lines(dom)
        assert 'data-ready="1"' in dom.stdout  # the script ran to its end
    dom = chromium("--dump-dom", case_page.as_uri()).stdout
    assert 'data-charts="38"' in dom  # 19 judged metrics, each over the month and zoomed on its last 14 nights
    # read first: the last night against its baseline, before any chart; worse rows on top
    assert 0 < dom.index('id="last-night"') < dom.index('<svg class="chart"')
    # grouped, each chart with its unit on the axis and in its caption
    groups = re.findall(r'<section class="group" data-group="([^"]+)"', dom)
    assert groups == ["headline ratios", "throughput", "latency", "work counters"]  # no CPU in the nightly runs
    charts = re.findall(r'<svg class="chart".*?</svg>', dom)
    assert len(charts) == 38 and all('class="unit"' in c for c in charts)
    assert "after.tps</code> · transactions/s" in dom and "latency_ms_p95</code> · ms" in dom
    assert dom.count('class="zoom-recent" hidden=""') == 19 and '<body data-zoom' not in dom
    zoomed = chromium("--dump-dom", case_page.as_uri() + "#recent")
    assert console_lines(zoomed) == [] and re.search(r'<body[^>]* data-zoom="recent"', zoomed.stdout)
    assert zoomed.stdout.count('class="zoom-all" hidden=""') == 19 and 'class="zoom-recent" hidden' not in zoomed.stdout
    # the brush's zoom, as its link gives it: every whole-month chart drawn on nights 20-28 only
    brushed = chromium("--dump-dom", case_page.as_uri() + "#nights=20-28")
    assert console_lines(brushed) == [] and re.search(r'<body[^>]* data-nights="20-28"', brushed.stdout)
    whole = re.findall(r'<div class="zoom-all"><svg class="chart[^"]*"[^>]*>', brushed.stdout)
    assert len(whole) == 19 and all("zoomed" in s and 'data-shown="9"' in s for s in whole), whole[:2]
    assert '<button type="button" id="unzoom">' in brushed.stdout  # shown: the way back
    # the commit axis: each week's build labelled where it changes, its point linked to the upstream's compare
    assert all(f"@{c[:7]}</text>" in dom for c in WEEKLY_COMMITS)
    assert f'data-compare="https://github.com/MariaDB/server/compare/{WEEKLY_COMMITS[0]}...{WEEKLY_COMMITS[1]}"' in dom
    # the step night's flame graph: listed, linked from its ring, and the link resolves to inferno's SVG
    [link] = re.findall(r"<a href=\"([^\"]+-diff\.svg)\">after: B against A</a>", dom)
    assert f'<a href="{link}" class="flame">' in dom
    flame = chromium("--dump-dom", (case_page.parent / link).as_uri())
    assert flame.returncode == 0 and console_lines(flame) == [], flame.stderr[-2000:]
    assert "after: B against A" in flame.stdout and "row_search_mvcc" in flame.stdout
    shot = tmp_path / "dashboard.png"
    taken = chromium("--window-size=900,1800", f"--screenshot={shot}", case_page.as_uri())
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert console_lines(taken) == []
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / "dashboard-step.png")
    # under the last night's table, the throughput group leads with after.tps (a change point comes
    # first in its group): the dashed red mark is on screen
    colours = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 24) or []
    assert sum(n for n, rgb in colours if all(abs(a - b) < 12 for a, b in zip(rgb, CHANGE_RGB, strict=True))) > 100
    html = case_page.read_text()
    assert html.index("<code>after.tps</code>") < html.index("<code>before.tps</code>")
    assert "change -7." in html or "change -8." in html
    assert 'class="excluded"' in html and "host was busy" in html  # the excluded night, drawn hollow and listed
    # every judged metric's tolerance band is drawn; the index opens with the case that stands worse
    assert html.count('class="band"') == 38 and "tolerance ±5% around the nights' median" in html
    index = (site / "index.html").read_text()
    standing = index.split("<h2>Standing worse (1)</h2>", 1)[1].split("<h2>All cases</h2>", 1)[0]
    assert "epyc-nvme/mariadb-10.11/tiny/smoke/default" in standing and "change point: " in standing

