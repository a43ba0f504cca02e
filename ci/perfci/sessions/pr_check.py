"""A pull request's perf check in one place (`perfci pr-check`): what the PR changed,
the A/Bs that judge it, their reports handed to the sticky comment, the check's verdict.

- `scenarios` (perfci-pr.yml, a perfci project's PR): each changed scenario, the base's
  version (A) against the head's (B); each servers.yaml id the PR changed, its base spec
  against its head spec on a few scenarios; in perfci's own repository, a change of perfci
  itself (ci/, scripts/, the lock): the base's perfci against the head's in alternating
  rounds (sessions/harness.py); an edit of baselines/: the thresholds it moves.
- `server-code` (perfci-server-pr.yml, a server repository's PR): the base and head commits
  built from the runner's mirror, in the sandbox (scripts/build-server), A/B'd on the named
  scenarios.

Each A/B is a `perfci ab` process of its own (its host lock, its servers, its cancellation,
its exit code); the first that ends in bad input (2), a failure (3) or an interruption
ends the check with that code. Every report lands in the report directory with its typed
verdict beside it (the comment reads those, never prose)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from perfci.judge import thresholds
from perfci.judge.paired import ALPHA
from perfci.model.outputs import CheckVerdict
from perfci.model.scenario import cases, parse_scenario
from perfci.model.verdicts import Outcome
from perfci.providers.basedirs import cache_root
from perfci.providers.local import SANDBOX_SERVERS_ENV
from perfci.providers.servers import load_servers
from perfci.providers.trusted_git import git, run_git
from perfci.report.thresholds_report import diff_markdown
from perfci.sessions.harness import judge_harness
from perfci.sessions.rounds import round_order
from perfci.store.baseline_files import read_tree
from perfci.util.errors import EXIT_INFRA, EXIT_REGRESSION, BadInput, InfraFailure
from perfci.util.files import write_atomic
from perfci.util.paths import source_checkout

PR_SCENARIOS = 2            # a servers.yaml change is A/B'd on this many scenarios: a PR check ends in minutes
HARNESS_ROUNDS = 3          # base perfci vs head perfci: the fewest rounds whose throughput is judged
HARNESS_PATHS = ("ci/", "scripts/", "requirements.lock")  # what makes a PR of perfci's own a harness change
FORK_OPT_IN = Path("/etc/perfci/fork-server-builds")     # root's yes to a fork's build on a kept runner
PR_CHECK_LEVEL = ALPHA      # a PR check's chance of failing a PR that changed nothing, over all its A/Bs


@dataclass(frozen=True)
class PlannedAb:
    stem: str                  # the report is ab-STEM.md, its typed verdict ab-STEM.json
    regressed_as: str          # how the check's verdict names it
    args: tuple[str, ...]      # `perfci ab` arguments, without --report, --json and --out


@dataclass
class CheckRun:
    """What the A/Bs of one check found, as it goes."""
    report_dir: Path
    out_dir: Path
    summary: Path | None                     # GitHub's job summary: every report, as it is written
    regressed: list[str] = field(default_factory=list)

    def say(self, markdown: str) -> None:
        if self.summary is not None:
            with self.summary.open("a", encoding="utf-8") as f:
                f.write(markdown.rstrip("\n") + "\n\n")

    def report(self, stem: str) -> Path:
        return self.report_dir / f"ab-{stem}.md"


# --- git in the PR's checkout: the trusted settings (no global config, hooks or replace refs) -----------------

def changed_files(base: str, checkout: Path, *paths: str) -> list[str]:
    return git(["diff", "--name-only", base, "HEAD", "--", *paths], cwd=checkout).split()


def file_at(base: str, path: str, checkout: Path) -> str | None:
    """PATH as the base commit has it, or None where it has none."""
    proc = run_git(["show", f"{base}:{path}"], cwd=checkout)
    return proc.stdout if proc.returncode == 0 else None


# --- what a perfci project's PR changed, as A/Bs --------------------------------------------------------------

def scenario_abs(base: str, checkout: Path, work: Path, unchanged: list[str] | None = None) -> list[PlannedAb]:
    """Each scenario file the PR changed or added: the base's version (A; none for an added
    one, then both sides run the head's) against the head's (B). A file whose edit changes
    nothing a run executes at the smoke profile (its description, comments) is no A/B: its
    name goes to `unchanged`."""
    planned: list[PlannedAb] = []
    unchanged = unchanged if unchanged is not None else []
    for path in changed_files(base, checkout, "scenarios/"):
        if not path.endswith(".yaml") or not (checkout / path).is_file():
            continue  # a deleted scenario is nothing to measure
        name = Path(path).name
        args: tuple[str, ...] = (path,)
        before = file_at(base, path, checkout)
        if before is not None and same_measurement(before, (checkout / path).read_text(encoding="utf-8"), path):
            unchanged.append(name)
            continue
        if before is not None:
            kept = work / "base-scenarios" / name
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(before, encoding="utf-8")
            args += ("--a-scenario", str(kept))
        planned.append(PlannedAb(Path(name).stem, name, args))
    return planned


def same_measurement(before: str, after: str, source: str, profile: str = "smoke") -> bool:
    """Whether two versions of a scenario run the same cases at PROFILE (the resolved cases'
    hashes: a description or a comment is not in them); False when either does not load
    (the A/B then says why)."""
    try:
        old, new = (cases(parse_scenario(text, source), profile, source) for text in (before, after))
    except (BadInput, ValueError):
        return False
    return [c.content_hash() for c in old] == [c.content_hash() for c in new]


def unchanged_report(name: str, report: Path) -> None:
    """The report of a scenario whose edit changes nothing measured, with its typed verdict."""
    line = (f"**Unchanged**: the PR's edit of `{name}` changes nothing a run executes at the smoke profile "
            "(every case's scenario hash is the base's): no A/B.")
    write_atomic(report, f"## perfci: {name}\n\n{line}\n")
    write_atomic(report.with_suffix(".json"), json.dumps(CheckVerdict(
        check="scenario", outcome=Outcome.UNCHANGED, verdict_line=line).dump(), indent=1) + "\n")


def server_changes(base_yaml: Path | None, head_yaml: Path, scenarios: Sequence[str],
                   project: Path) -> Iterator[tuple[str, str | None, str, str]]:
    """(id, base spec or None for an added id, head spec, scenario) per servers.yaml id the
    PR changed or added and per scenario it is A/B'd on (the named ones, else the project's
    first PR_SCENARIOS by name)."""
    before = {e.id: e.spec for e in load_servers(base_yaml).servers} if base_yaml is not None else {}
    names = list(scenarios) or sorted(p.stem for p in (project / "scenarios").glob("*.yaml"))[:PR_SCENARIOS]
    for entry in load_servers(head_yaml).servers:
        if before.get(entry.id) != entry.spec:
            for name in names:
                yield entry.id, before.get(entry.id), entry.spec, name


def server_abs(base: str, checkout: Path, work: Path, scenarios: Sequence[str], run: CheckRun) -> list[PlannedAb]:
    if not (checkout / "servers.yaml").is_file():
        return []
    before = file_at(base, "servers.yaml", checkout)
    base_yaml = None
    if before is not None:
        base_yaml = work / "base-servers.yaml"
        base_yaml.write_text(before, encoding="utf-8")
    planned = []
    for server_id, base_spec, head_spec, scenario in server_changes(base_yaml, checkout / "servers.yaml", scenarios,
                                                                     checkout):
        if base_spec is None:
            run.say(f"servers.yaml adds `{server_id}`: nothing to A/B it against (its first nightly is its reference)")
            continue
        planned.append(PlannedAb(f"server-{server_id}-{scenario}", f"{server_id} on {scenario}",
                                 (scenario, "--a", base_spec, "--b", head_spec)))
    return planned


def baselines_diff(base: str, checkout: Path, report: Path) -> bool:
    """An edit of baselines/ as the thresholds it moves (every head file loaded: a broken
    one is bad input, named): REPORT and its typed verdict; False when baselines/ is untouched."""
    if not changed_files(base, checkout, "baselines/"):
        return False
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "baselines"
        before.mkdir()
        if run_git(["cat-file", "-e", f"{base}:baselines"], cwd=checkout).returncode == 0:  # (the PR may add it)
            archive = Path(tmp) / "base.tar"
            git(["archive", "-o", str(archive), base, "baselines"], cwd=checkout)
            subprocess.run(["tar", "-x", "-f", str(archive), "-C", tmp], check=True)
        diff = thresholds.diff(read_tree(before), read_tree(checkout / "baselines"))
    text = diff_markdown(diff)
    write_atomic(report, text)
    verdict = next(line for line in text.splitlines() if line.startswith("**"))
    write_atomic(report.with_suffix(".json"), json.dumps(CheckVerdict(
        check="baselines", outcome=Outcome.UNCHANGED if diff.empty else Outcome.MOVED, verdict_line=verdict).dump(),
        indent=1) + "\n")
    return True


def touches_perfci(base: str, checkout: Path) -> bool:
    return bool(changed_files(base, checkout, *HARNESS_PATHS))


# --- running perfci's own commands ------------------------------------------------------------------------------

def perfci_argv(tool: Path | None = None) -> list[str]:
    """This perfci, or the perfci of the checkout TOOL (scripts/perfci: its own code)."""
    if tool is not None:
        return [str(tool / "scripts" / "perfci")]
    return [sys.executable, "-m", "perfci.cli"]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # a PR's checkout is the working directory: nothing in it is imported (no `perfci/`,
    # no `click.py` of the PR's ahead of perfci's own)
    return {**os.environ, "PYTHONSAFEPATH": "1", **(extra or {})}


def run_child(argv: Sequence[str], cwd: Path, env: dict[str, str], stdout: int | None = None) -> int:
    """A perfci command as a child: SIGINT and SIGTERM passed on (it stops its servers
    and says what it kept), its exit code returned."""
    child = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=stdout)

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def check_level(abs_count: int, level: float = PR_CHECK_LEVEL) -> tuple[float, str]:
    """Each A/B's level when a check runs `abs_count` of them (#55: a PR check is a test
    too): the check's level shared equally (Bonferroni), and the line that says so."""
    each = level / max(abs_count, 1)
    many = (f"{abs_count} A/Bs, each at {each:.3%}" if abs_count > 1 else "one A/B")
    return each, (f"This check's level: {many} (interleaved: family-wise over its judged metrics and looks), so a "
                  f"pull request that changes nothing fails it with a chance of at most {level:.1%} (a rounds A/B "
                  "judges each metric by its own interval instead, docs/verdicts.md).")


def run_abs(planned: Sequence[PlannedAb], run: CheckRun, checkout: Path, env: dict[str, str]) -> int:
    """Each A/B in turn, at the check's level shared over them; 0 when all ran (their
    regressions kept in `run`), else the first other exit code (bad input, a failure,
    an interruption)."""
    if not planned:
        return 0
    each, said = check_level(len(planned))
    run.say(said)
    env = {**env, "PERFCI_AB_LEVEL": repr(each)}
    for ab in planned:
        report = run.report(ab.stem)
        code = run_child([*perfci_argv(), "ab", *ab.args, "--profile", "smoke", "--mode", "auto",
                          "--report", str(report), "--json", str(report.with_suffix(".json")),
                          "--out", str(run.out_dir)], checkout, env, stdout=subprocess.DEVNULL)
        if report.is_file():
            run.say(report.read_text(encoding="utf-8"))
        if code == EXIT_REGRESSION:
            run.regressed.append(ab.regressed_as)
        elif code != 0:
            return code
    return 0


def harness_ab(base: str, checkout: Path, run: CheckRun, scenario: str, server: str,
               rounds: int = HARNESS_ROUNDS) -> int:
    """perfci at the base commit (A, a worktree) against the checkout's (B): SCENARIO on
    SERVER in alternating rounds, each a fresh `perfci run`; then judged as
    `perfci harness-check` does (the same work, no judged metric moved)."""
    with tempfile.TemporaryDirectory(prefix="perfci-harness-") as tmp:
        base_tool = Path(tmp) / "base"
        git(["worktree", "add", "-q", "--detach", str(base_tool), base], cwd=checkout)
        try:
            tools = (base_tool, checkout)
            for r in range(rounds):
                for side in round_order(r):
                    print(f"== round {r + 1} of {rounds}: {'ab'[side]} ({tools[side]})", file=sys.stderr)
                    code = run_child([*perfci_argv(tools[side]), "run", scenario, "--server", server, "--profile",
                                      "smoke", "--out", str(Path(tmp) / "ab"[side]), "--quiet"], checkout,
                                     child_env(), stdout=subprocess.DEVNULL)
                    if code != 0:
                        return code
            text, changed, verdict = judge_harness(Path(tmp) / "a", Path(tmp) / "b")
        finally:
            run_git(["worktree", "remove", "--force", str(base_tool)], cwd=checkout)
    report = run.report("harness")
    write_atomic(report, text)
    write_atomic(report.with_suffix(".json"), json.dumps(verdict.dump(), indent=1) + "\n")
    run.say(text)
    if changed:
        run.regressed.append("the harness")
    return 0


# --- a server repository's PR ------------------------------------------------------------------------------------

def trusted_build_script() -> Path:
    """perfci's own scripts/build-server (PERFCI_BUILD_SCRIPT, the runner's, else the
    perfci checkout running): never the checkout's, which is the PR's code."""
    named = os.environ.get("PERFCI_BUILD_SCRIPT")
    script = Path(named) if named else (source_checkout() or Path("/nonexistent")) / "scripts" / "build-server"
    if not script.is_file():
        raise InfraFailure(f"{script}: no scripts/build-server of perfci's (run perfci from its checkout, "
                           ".perfci-tool/scripts/perfci, or set PERFCI_BUILD_SCRIPT)")
    return script


def fork_refusal(opt_in: Path = FORK_OPT_IN) -> str | None:
    """A fork's code built on a runner that outlives the job: only where root said yes."""
    try:
        st = opt_in.stat()
    except OSError:
        st = None
    if st is not None and st.st_uid == 0 and not st.st_mode & 0o022:
        return None
    return (f"a fork's pull request builds its code on this runner only where root allowed it ({opt_in}, "
            "root-owned: scripts/runner-bootstrap --allow-fork-builds, for runners thrown away after each job)")


def submodule_refusal(mirror: Path, base: str, head: str, upstream_fetch: UpstreamCheck) -> str | None:
    """A fork PR may not move what the build fetches from elsewhere: .gitmodules unchanged,
    and each gitlink it moves to a commit its submodule's upstream has (else the runner
    would fetch and build code nobody reviewed, from where the fork chose)."""
    moved = []
    for line in git(["diff", "--raw", "--no-renames", "-r", base, head], git_dir=mirror).splitlines():
        meta, _, path = line.partition("\t")
        fields = meta.split()
        if path == ".gitmodules":
            return "the pull request changes .gitmodules: a fork may not change where submodules come from"
        if len(fields) >= 4 and "160000" in (fields[0].lstrip(":"), fields[1]):
            moved.append((path, fields[3]))
    if not moved:
        return None
    modules = run_git(["config", "--blob", f"{base}:.gitmodules", "--get-regexp", r"^submodule\..*\.(path|url)$"],
                      git_dir=mirror)
    urls: dict[str, str] = {}
    paths: dict[str, str] = {}
    for line in modules.stdout.splitlines():
        key, _, value = line.partition(" ")
        name, kind = key[len("submodule."):].rsplit(".", 1)
        (paths if kind == "path" else urls)[name] = value
    by_path = {paths[n]: urls[n] for n in paths if n in urls}
    for path, sha in moved:
        url = by_path.get(path)
        if url is None:
            return f"the pull request adds or moves the gitlink {path} that the base's .gitmodules does not name"
        if sha != "0" * 40 and not upstream_fetch(url, sha):
            return f"the pull request moves submodule {path} to {sha[:12]}, which its upstream {url} does not have"
    return None


class UpstreamCheck:
    """Whether a submodule's upstream has a commit on one of its branches or tags: its
    commits (no trees, no blobs) fetched into a scratch repository with trusted git."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch

    def __call__(self, url: str, sha: str) -> bool:
        repo = self.scratch / "upstream.git"
        shutil.rmtree(repo, ignore_errors=True)
        git(["init", "-q", "--bare", str(repo)])
        fetched = run_git(["fetch", "-q", "--no-tags", "--filter=tree:0", url, "+refs/heads/*:refs/heads/*",
                           "+refs/tags/*:refs/tags/*"], git_dir=repo)
        if fetched.returncode != 0:
            raise InfraFailure(f"submodule upstream {url}: cannot fetch (exit {fetched.returncode})",
                               detail=fetched.stderr[-2000:])
        found = run_git(["for-each-ref", "--contains", sha, "--count=1"], git_dir=repo)
        return found.returncode == 0 and bool(found.stdout.strip())


def build_both(flavor: str, shas: Sequence[str], env: dict[str, str]) -> int:
    """Both commits built (in the sandbox: scripts/build-server's `untrusted`) before
    anything is measured; 0, or EXIT_INFRA naming the one that failed."""
    script = trusted_build_script()
    for sha in shas:
        print(f"building {flavor} at {sha}", file=sys.stderr)
        code = run_child([str(script), flavor, sha], Path.cwd(), env, stdout=subprocess.DEVNULL)
        if code != 0:
            print(f"build of {sha} failed (exit {code})", file=sys.stderr)
            return EXIT_INFRA if code not in (2, 130) else code
    return 0


# caches the runner's environment may name for trusted runs: never a pull request's
TRUSTED_CACHE_ENV = ("CCACHE_DIR", "PERFCI_BUILD_CACHE", "PERFCI_SRC_CACHE", "PERFCI_SNAPSHOT_DIR")


def require_sandbox_account() -> None:
    if not os.environ.get("PERFCI_SANDBOX_USER"):
        raise InfraFailure("no sandbox account (PERFCI_SANDBOX_USER): a pull request's code is built only in the "
                           "sandbox; run scripts/runner-bootstrap RUNNER_DIR --sandbox-user perfci-sandbox as root")


def pr_build_env(mirror: Path, base: str, scratch: Path) -> dict[str, str]:
    """The builds' and A/Bs' environment in a server-code check: the sandbox account
    required (a PR's code builds and its servers run only there, their files in the job's
    cache), the job's caches (PERFCI_CACHE), never ones the runner's environment names for
    trusted runs; perfci's own build script; both commits built from the runner's MIRROR,
    never the flavor's upstream. Only the BASE commit builds in the caches kept between
    jobs; every other commit (the PR's code) in SCRATCH, this job's alone
    (scripts/build-server: PERFCI_BUILD_SCRATCH)."""
    require_sandbox_account()
    env = {k: v for k, v in child_env().items() if k not in TRUSTED_CACHE_ENV}
    return {**env, "PERFCI_BUILD_SCRIPT": str(trusted_build_script()), "PERFCI_BUILD_REPO": str(mirror),
            SANDBOX_SERVERS_ENV: str(cache_root() / "servers"), "PERFCI_BUILD_SCRATCH": str(scratch),
            "PERFCI_BUILD_TRUSTED_COMMIT": base}


@contextmanager
def job_scratch() -> Iterator[Path]:
    """This job's scratch dir for the PR's own builds: after the check only their logs
    stay (builds/*.log, for the runner's admin), until the next job removes them with
    whatever a cancelled job left (a runner runs one job at a time)."""
    jobs = cache_root() / "jobs"
    shutil.rmtree(jobs, ignore_errors=True)
    jobs.mkdir(parents=True)
    scratch = Path(tempfile.mkdtemp(prefix="pr-", dir=jobs))
    scratch.chmod(0o711)  # the sandbox account walks to what it is given inside
    try:
        yield scratch
    finally:
        builds = scratch / "builds"
        for path in [*(p for p in scratch.iterdir() if p != builds),
                     *(p for p in (builds.iterdir() if builds.is_dir() else ()) if not p.name.endswith(".log"))]:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def server_code_abs(flavor: str, base: str, head: str, scenarios: Sequence[str], phases: Sequence[str],
                    checkout: Path) -> list[PlannedAb]:
    planned = []
    phase_args = tuple(a for p in phases for a in ("--phase", p))
    for scenario in scenarios:
        name = Path(scenario).name.removesuffix(".yaml")
        where = str((checkout / scenario).resolve()) if (checkout / scenario).is_file() else scenario
        planned.append(PlannedAb(name, name, (where, "--a", f"build:{flavor}@{base}", "--b", f"build:{flavor}@{head}",
                                              *phase_args)))
    return planned


# --- the check's verdict -------------------------------------------------------------------------------------

def conclude(run: CheckRun, pr_number: int | None, perf_expected: bool) -> int:
    """The reports are where the comment workflow reads them (with the PR's number); a
    regression fails the check unless the PR carries perf-expected (said in the summary)."""
    run.report_dir.mkdir(parents=True, exist_ok=True)
    if pr_number is not None:
        write_atomic(run.report_dir / "pr-number", f"{pr_number}\n")
    if not run.regressed:
        return 0
    what = " ".join(run.regressed)
    if perf_expected:
        run.say(f"Regression in {what}: accepted by the perf-expected label.")
        print(f"perfci: B regressed in {what}: accepted by the perf-expected label")
        return 0
    print(f"::error::perfci: B regressed in {what} (see the job summary); add the perf-expected label if this is "
          "intended")
    return EXIT_REGRESSION


@contextmanager
def check_run(report_dir: Path, out_dir: Path) -> Iterator[CheckRun]:
    report_dir.mkdir(parents=True, exist_ok=True)
    for stale in report_dir.glob("ab-*"):  # a rerun's reports are its own
        stale.unlink()
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    yield CheckRun(report_dir, out_dir, Path(summary) if summary else None)


def require_sha(value: str, what: str) -> str:
    if len(value) != 40 or any(c not in "0123456789abcdef" for c in value):
        raise BadInput(f"{what} {value!r}: a full 40-character commit SHA is needed")
    return value
