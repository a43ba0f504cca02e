"""The nightly ratchet: 60 nights of pure noise through the real nightly loop
(nightly.run_night: threshold issues against the history, history append, change
points; issue bodies written to files), tps and latency with a run-to-run CV of
9 % (this runner's, benchmarks/results/calibrate-20261123.md) against the default
5 % tolerance, every other metric at 1 %.

Leaving every night that was worse beyond tolerance (even inconclusively) out of
the baseline cuts its lower tail: the baseline drifts high and noise opens issues.
Only standing regressions (judged, or worse again after a night that stood) leave
it now. The simulation assumes independent lognormal nights; the same loop with the
old exclusion rule is run beside it, so the test shows the difference, not only a
count that a quiet seed could give."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from perfci.alert.nightly import NightOptions, run_night
from perfci.alert.regression_issues import DEFAULT_CLOSE_AFTER
from perfci.judge import design
from perfci.model.abratio import AbRatio
from perfci.model.confirmation import Confirmation
from perfci.model.history import DEFAULT_HISTORY_WINDOW, CaseHistory
from perfci.model.identity import CaseIdentity
from perfci.model.result import Result
from perfci.store.history_files import case_history

from factories import make_result

# ~40 s of E-Divisive over hundreds of simulated nights: with the slow suite, as test_nightly_month
pytestmark = pytest.mark.slow

NIGHTS = 60
NOISY = ("tps", "qps", "qps_write", "latency_ms_avg", "latency_ms_p95")


def night(n: int, rng: np.random.Generator, step: float = 1.0, step_from: int = NIGHTS + 1) -> Result:
    data = make_result(tps=1000.0).dump()
    data["id"] = f"ratchet-night{n:02d}"
    data["finished_at"] = f"2026-09-{1 + (n - 1) % 30:02d}T03:00:00+00:00".replace("2026-09", f"2026-{9 + (n - 1) // 30:02d}")
    for body in data["phases"].values():
        m = body["metrics"]
        speed = math.exp(rng.normal(0, 0.09)) * (step if n >= step_from else 1.0)
        for key, value in list(m.items()):
            if not isinstance(value, float) or key == "duration_s":
                continue
            if key in NOISY:
                m[key] = value * (speed if not key.startswith("latency") else 1 / speed)
            else:
                m[key] = value * math.exp(rng.normal(0, 0.01))
    return Result.model_validate(data)


ReferenceAB = Callable[[int, Result, np.random.Generator], Confirmation | None]


def run_nights(tmp_path: Path, seed: int, reference_ab: ReferenceAB | None = None, nights: int = NIGHTS,
               **series) -> tuple[list[list[str]], list[float]]:
    """Per night the actions, and the tps baseline mean the night was judged against;
    `reference_ab(n, result, rng)`: the nightly's A/B against its reference that night,
    if one ran (perfci confirm's outcome)."""
    rng = np.random.default_rng(seed)
    root = tmp_path / f"history-{seed}"
    root.mkdir()
    actions, baselines = [], []
    for n in range(1, nights + 1):
        result = night(n, rng, **series)
        hist = case_history(root, CaseIdentity.of(result))
        used = hist.baseline_records(result.scenario.hash, DEFAULT_HISTORY_WINDOW)
        baselines.append(statistics.mean(r.metrics["before.tps"] for r in used) if len(used) >= 2 else math.nan)
        ab = reference_ab(n, result, rng) if reference_ab else None
        actions.append(run_night([result], NightOptions(history_root=root, min_nights=2), None,
                                 tmp_path / f"issues-{seed}", {result.id: ab} if ab else None).actions)
    return actions, baselines


def openings(actions: list[list[str]]) -> list[int]:
    """The nights on which an issue would open: a case's issue file (threshold, or change
    point) written when none was written on the `DEFAULT_CLOSE_AFTER` nights before (an
    issue of the case still open then would have been commented, not opened; after that
    many nights without a regression it would have been closed). Metrics that move
    together (tps, qps, latency of one phase) are one case's issue: one event."""
    last: dict[str, int] = {}
    opened = set()
    for n, lines in enumerate(actions, 1):
        for a in lines:
            if a.startswith("wrote "):
                name = Path(a.removeprefix("wrote ")).name.split("-change-")[0]
                if name not in last or n - last[name] > DEFAULT_CLOSE_AFTER:
                    opened.add(n)
                last[name] = n
    return sorted(opened)


def drift(baselines: list[float]) -> float:
    """How far the tps baseline of the second month is from the truth (1000)."""
    return statistics.mean(b for b in baselines[30:] if not math.isnan(b)) / 1000 - 1


def old_rule(self, verdict):
    """Before: every worse night stayed out of the baseline."""
    return sorted(verdict.worse)


@pytest.fixture(scope="module")
def noise_nights(tmp_path_factory):
    """run_nights of pure noise per seed, each simulated once for the module (the old-rule
    comparison below judges the very series the noise test judged)."""
    done: dict[int, tuple[list[list[str]], list[float]]] = {}

    def nights(seed: int) -> tuple[list[list[str]], list[float]]:
        if seed not in done:
            done[seed] = run_nights(tmp_path_factory.mktemp("noise"), seed)
        return done[seed]
    return nights


@pytest.mark.parametrize("seed", [100, 101])
def test_sixty_nights_of_noise_open_at_most_one_issue_and_the_baseline_does_not_drift(noise_nights, seed):
    actions, baselines = noise_nights(seed)
    assert len(openings(actions)) <= 1, openings(actions)
    assert abs(drift(baselines)) < 0.03, f"baseline drifted {drift(baselines):+.1%}"


def test_the_old_rule_ratchets_on_the_same_nights(noise_nights, tmp_path, monkeypatch):
    """What the test above guards against: with every worse night left out, the same
    60 nights (seed 100) drive the baseline high and open issues on noise
    (benchmarks/results/nightly-ratchet-*.md: +4 to +28 % over 12 series)."""
    _, fixed = noise_nights(100)
    monkeypatch.setattr(CaseHistory, "standing", old_rule)
    (tmp_path / "old").mkdir()
    actions, old = run_nights(tmp_path / "old", 100)
    assert drift(old) > drift(fixed) + 0.015, (drift(old), drift(fixed))
    assert len(openings(actions)) >= 2


def test_a_lasting_step_stands_and_stays_out_of_the_baseline(tmp_path):
    """A 20 % tps step from night 31 (2 run sds, no A/B behind it): called within six
    nights against a 10-night baseline — at the default false-issue budget the
    unconfirmed threshold road needs its nights together at 0.067 % per case-night shared
    over the judged metrics, the change point its 0.1 % (at 0.5 % levels it opened by the
    4th night); its nights stand and the baseline keeps the old level."""
    actions, baselines = run_nights(tmp_path, 13, nights=46, step=0.8, step_from=31)  # 16 nights of the step
    opened = [n for n in openings(actions) if n >= 31]   # (noise may open one before: see above)
    assert opened and opened[0] <= 36, opened
    assert statistics.mean(baselines[40:]) > 930, baselines[40:]
    records = case_history(tmp_path / "history-13", CaseIdentity.of(night(1, np.random.default_rng(0)))).records
    stood = [r for r in records[30:] if r.standing]
    assert len(stood) >= 10, [r.standing for r in records[30:]]


def server_changed_on(change_night: int, step: float) -> ReferenceAB:
    """The nightly's A/B against its reference, from the night tonight's server differs
    from the reference's (a new build; the reference stays the last accepted night), as
    its design says it measures. Assumed, not run: log B/A of each phase's tps is normal
    around log(step) with the standard error the sized design's variance model gives
    (runner default, two phases of nine judged metrics: judge/design.py, whose power
    tests/judge/test_design.py checks against simulated bursts), and it is flagged when the
    final look's interval excludes 1 and the change is beyond 1 % (paired.judge's rule).
    Both phases are drawn independently."""
    sized = design.for_case(None, phases=2, judged_per_phase=design.DEFAULT_JUDGED_PER_PHASE, warmup=2)
    level = design.final_level(sized.instances, 2 * design.DEFAULT_JUDGED_PER_PHASE)
    z_level, z_power = NormalDist().inv_cdf(1 - level / 2), NormalDist().inv_cdf(0.9)
    se = sized.mde / (z_level + z_power)

    def reference_ab(n: int, result: Result, rng: np.random.Generator) -> Confirmation | None:
        if n < change_night:
            return None  # tonight's server is the reference's: no A/B runs
        ratios = {}
        for phase in ("before", "after"):
            ratio = step * math.exp(rng.normal(0, se))
            low, high = ratio * math.exp(-z_level * se), ratio * math.exp(z_level * se)
            verdict = "regression" if high < 1 and ratio < 0.99 else "inconclusive"
            ratios[f"{phase}.tps"] = AbRatio(a=1000.0, b=1000.0 * ratio, ratio=ratio, low=low, high=high,
                                             confidence=1 - level, mde=sized.mde, verdict=verdict)
        flagged = [k for k, r in ratios.items() if r.verdict == "regression"]
        return Confirmation(result_id=result.id, case="default", status="confirmed" if flagged else "not-confirmed",
                            reason="simulated reference A/B", nightly_regressions=[], a="mariadb-10.11",
                            b="mariadb-10.11-new", profile="nightly", trigger="server-changed",
                            reference_version="10.11.19", ab_regressions=flagged, ratios=ratios,
                            sizing=sized.describe())
    return reference_ab


def test_an_8_percent_step_from_a_new_server_opens_its_issue_the_night_it_arrives(tmp_path):
    """#22's case: CV 9 % between nights, a lasting 8 % tps slowdown from night 31 that a
    new server build brings. One night against a 10-night baseline cannot call 8 % at 9 %
    noise (its MDE is ~38 %); the A/B against the reference that runs because the server
    changed sees it that night (its design sees 4.9 % at 90 % power). Three series."""
    threshold_on_the_night = 0
    for seed in (21, 22, 23):
        (tmp_path / f"ab-{seed}").mkdir()
        (tmp_path / f"threshold-{seed}").mkdir()
        # the nights up to the step's third (what the issue asks: an issue within three nights)
        actions, _ = run_nights(tmp_path / f"ab-{seed}", seed, server_changed_on(31, 0.92), nights=33,
                                step=0.92, step_from=31)
        opened = [n for n in openings(actions) if n >= 31]
        assert opened and opened[0] == 31, (seed, opened)
        # the same nights without the A/B: the threshold alone catches that night by luck at best
        alone, _ = run_nights(tmp_path / f"threshold-{seed}", seed, nights=31, step=0.92, step_from=31)
        threshold_on_the_night += 31 in openings(alone)
    assert threshold_on_the_night < 3


def test_a_new_server_without_a_change_opens_nothing(tmp_path):
    """The same nights with a server change that changes nothing (an A/A each night from
    night 31): the A/B flags nothing beyond what noise alone opened before (at most one)."""
    actions, _ = run_nights(tmp_path, 21, server_changed_on(31, 1.0))
    assert len(openings(actions)) <= 1, openings(actions)
