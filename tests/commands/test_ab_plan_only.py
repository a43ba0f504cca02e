"""`perfci ab --plan-only`: the size it prints comes from the noise model learned on the
case as it is now, and a stale one is said, not silently used. Planned on the real server
binary; nothing runs."""

from __future__ import annotations

from perfci.model.identity import server_line
from perfci.run.plan import plan_run
from perfci.store.noise_files import save

from conftest import run_perfci
from factories import QUIET_NOISE, make_noise_model


def test_plan_only_sizes_from_the_current_noise_model_and_says_why_a_stale_one_is_not_used(real_server_tools,
                                                                                             tmp_path):
    plan = plan_run("rebuild-after-delete", "smoke", "local", [], tmp_path / "work")
    identity = plan.provider.identity
    line = server_line(identity.flavor, str(identity.version))

    def model_at(scenario_hash: str, directory: str) -> str:
        save(make_noise_model({"before.tps": QUIET_NOISE, "after.tps": QUIET_NOISE}, "rebuild-after-delete", scenario_hash, line,
                              burst=250), tmp_path / directory)
        return str(tmp_path / directory)

    current = run_perfci("ab", "rebuild-after-delete", "--plan-only", "--noise-dir",
                         model_at(plan.resolved.content_hash(), "current"))
    assert current.returncode == 0, current.stderr
    assert "noise from the noise model of 6 A/As learned 2026-11-20" in current.stdout
    assert "not used" not in current.stderr

    stale = run_perfci("ab", "rebuild-after-delete", "--plan-only", "--noise-dir", model_at("sha256:" + "a" * 64, "stale"))
    assert stale.returncode == 0, stale.stderr
    assert "noise from the runner default" in stale.stdout
    assert ("noise model of rebuild-after-delete at smoke not used: it was learned on scenario sha256:aaaaaaaaaaaa"
            in stale.stderr), stale.stderr
    assert "re-run `perfci calibrate`" in stale.stderr
