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
