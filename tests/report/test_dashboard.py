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


def test_builds_show_their_commit_link_the_commits_between_nights_and_ring_the_ab_nights(tmp_path):
    """A build: server's nights carry the commit on the axis and a compare link to its
    upstream from the night before; a night its reference A/B judged is ringed."""
    from perfci.alert.nightly import NightOptions, run_night
    from perfci.model.confirmation import Confirmation
    from perfci.report.dashboard_site import build

    from factories import make_result

    commits = ["a" * 40, "a" * 40, "b" * 40, "c" * 40]
    results = []
    for i, commit in enumerate(commits):
        data = make_result(tps=1000 - 60 * (i == 3)).dump()
        data["server"]["commit"] = commit
        results.append(type(make_result()).model_validate(data))
    history = tmp_path / "h"
    for r in results[:-1]:
        run_night([r], NightOptions(history_root=history), dry_run_dir=tmp_path / "issues")
    confirmed = Confirmation(result_id=results[-1].id, case="x", status="confirmed", reason="the A/B flags it",
                             nightly_regressions=["before.tps"], profile="smoke")
    run_night([results[-1]], NightOptions(history_root=history, min_nights=1), dry_run_dir=tmp_path / "issues",
              confirmations={results[-1].id: confirmed})
    [_, page] = build(history, tmp_path / "site")
    text = page.read_text()
    assert "10.11.19-MariaDB @aaaaaaa" in text and "10.11.19-MariaDB @ccccccc" in text
    assert f'data-compare="https://github.com/MariaDB/server/compare/{"a" * 40}...{"b" * 40}"' in text
    assert text.count("/compare/" + "a" * 40 + "..." + "a" * 40) == 0  # the same commit: nothing to compare
    assert 'class="ab-confirmed" data-i="3"' in text and "its reference A/B confirmed it" in text
    assert 'data-i="0" data-v="1000.0"' in text


def test_a_confirmed_regressions_flame_graphs_go_with_the_history_to_the_site_the_issue_and_the_chart(tmp_path):
    """The nightly keeps a confirmed A/B's flame graphs beside the case's history; the
    dashboard publishes them at the same path, rings the night with a link to B against A
    and lists them; the issue's Why links the published diff. A not-confirmed A/B's are
    not kept, and a replayed night keeps one set."""
    from perfci.alert.nightly import NightOptions, run_night
    from perfci.model.abratio import AbRatio
    from perfci.model.confirmation import Confirmation
    from perfci.report.dashboard_site import build

    from factories import make_result

    results = [make_result(tps=1000.0 - 80 * (i == 3)) for i in range(4)]
    results = [type(r).model_validate({**r.dump(), "id": f"night-{i}", "finished_at": f"2026-10-0{i + 1}T03:00:00+00:00"})
               for i, r in enumerate(results)]
    confirm = tmp_path / "confirm"
    for night in (2, 3):
        explain = confirm / f"ab{night}.explain"
        explain.mkdir(parents=True)
        for name in ("after-a.svg", "after-b.svg", "after-diff.svg"):
            (explain / name).write_text(f"<svg xmlns='http://www.w3.org/2000/svg'><title>{name}</title></svg>")
    (tmp_path / "outside.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    history, site_url = tmp_path / "h", "https://team.example/perf"

    def night(i: int, c: Confirmation | None = None) -> None:
        run_night([results[i]], NightOptions(history_root=history, min_nights=1, site_url=site_url,
                                             confirmations_dir=confirm), dry_run_dir=tmp_path / "issues",
                  confirmations={results[i].id: c} if c else None)

    def confirmation(i: int, status: str) -> Confirmation:
        return Confirmation(result_id=results[i].id, case="x", status=status, reason="the A/B", profile="smoke",
                            nightly_regressions=[], ab_regressions=["after.tps"] if status == "confirmed" else [],
                            flamegraphs=[f"ab{i}.explain/after-{s}.svg" for s in ("a", "b", "diff")]
                            + ["../outside.svg"],  # data: never read from outside the confirmations
                            ratios={"after.tps": AbRatio(a=1000, b=920, ratio=0.92, low=0.9, high=0.94, confidence=0.995,
                                                         mde=0.03, verdict="regression")})

    night(0), night(1)
    night(2, confirmation(2, "not-confirmed"))
    night(3, confirmation(3, "confirmed"))
    night(3, confirmation(3, "confirmed"))  # a replay
    case = "local/mariadb-10.11/tiny/smoke/default"
    kept = history / f"{case}.flames"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == [
        "night-3", "night-3/after-a.svg", "night-3/after-b.svg", "night-3/after-diff.svg"]
    [_, page] = build(history, tmp_path / "site")
    assert (tmp_path / "site" / f"{case}.flames/night-3/after-diff.svg").read_text() == (
        confirm / "ab3.explain/after-diff.svg").read_text()
    text = page.read_text()
    assert '<a href="default.flames/night-3/after-diff.svg" class="flame"><circle' in text  # the ring opens it
    assert text.count('data-flame="default.flames/night-3/after-diff.svg"') == text.count('class="ab-confirmed"') > 0
    flames = text.split("id='flames'>", 1)[1].split("</ul>", 1)[0]
    assert flames.count("<li>") == 1 and "night-3" in flames and flames.index("after: B against A") < flames.index(
        "after: A<")
    [issue] = [p for p in (tmp_path / "issues").glob("*.md") if "night-3" in p.read_text()]
    opening = next(line for line in issue.read_text().splitlines() if line.startswith("- **Why**"))
    assert f"Flame graphs, B against A (red grew): [after]({site_url}/{case}.flames/night-3/after-diff.svg)" in opening


def test_without_a_dashboard_the_issue_names_the_flame_graphs_where_the_runs_artifact_holds_them():
    from types import SimpleNamespace

    from perfci.alert.regression_issues import flame_links
    from perfci.model.confirmation import Confirmation

    c = Confirmation(result_id="night-3", case="x", status="confirmed", reason="r", nightly_regressions=[],
                     flamegraphs=["ab.explain/after-a.svg", "ab.explain/after-diff.svg"])
    comp = SimpleNamespace(identity=SimpleNamespace(slug_path="local/m/tiny/smoke/default"))
    assert flame_links(comp, c, "") == (" Flame graphs, B against A (red grew), in the run's artifacts beside the "
                                        "confirmation: `confirm/ab.explain/after-diff.svg`.")
    assert flame_links(comp, c, "javascript:alert(1)").startswith(" Flame graphs, B against A (red grew), in the run's")
    assert flame_links(comp, c.model_copy(update={"flamegraphs": []}), "https://x") == ""
