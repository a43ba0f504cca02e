#!/usr/bin/env bash
# #54's measurements of counted work (`perfci ab --measure work`), run from a frozen
# worktree of the engine's commit on a quiet machine; every bursts file kept.
#   [BURSTS=6] [PHASES=...] benchmarks/work-campaign.sh stability [SERVER ...]   per server, microbench and
#       rebuild-after-delete: one work A/A of 2 instance pairs x 6 burst pairs (2 warm-up) per phase, and
#       one timed A/A of 1 x 4 (what a timed burst of the same phase takes: counting's slowdown); PHASES
#       (space-separated) narrows microbench to those phases and leaves rebuild-after-delete out
#   [BUDGET=3] [FIRST=1] benchmarks/work-campaign.sh aa N [SERVER ...]   A/As FIRST..N per server, alternating
#       microbench (one phase each, in turn) and rebuild-after-delete, as `perfci ab --measure work`
#       sizes them within --budget-minutes BUDGET
#   [BUDGET=6] benchmarks/work-campaign.sh effects [pfs] [throttled]   --measure both: a config that moves the statement
#       path (more code), a slowdown made on the host's side (the same work took longer)
#   PERFCI_BUILD_REPO=... [BUDGET=4] benchmarks/work-campaign.sh planted   the planted commits of the real
#       MariaDB tree by work A/Bs and a commit bisect by work (BUDGET: per bisect step)
#   [PHASES=...] [BURSTS=6] benchmarks/work-campaign.sh sweep SERVERS NAME   `perfci sweep microbench --measure work`
#       over SERVERS, one instance pair of BURSTS burst pairs (2 warm-up) each
# Kept under benchmarks/results/work/<day>-<engine>/<mode>/: bursts, reports, JSON verdicts,
# and runs.jsonl (one line per A/B: what ran, exit code, seconds).
# (benchmarks/work_report.py turns them into the tables of docs/findings.)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=$1
shift
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- ci scripts requirements.lock)" ] || { echo "the engine is not a clean commit" >&2; exit 2; }
phase_args=()  # PHASES (space-separated): only these microbench phases
for phase in ${PHASES:-}; do phase_args+=(--phase "$phase"); done
out=benchmarks/results/work/$(date -u +%Y-%m-%d)-${commit:0:12}/$mode
mkdir -p "$out"
export PERFCI_RUNNER_CLASS=work-campaign PERFCI_EXPLAIN=never
WORK_METRIC=instructions_per_txn
ab() {  # ab LABEL ARGS...: one A/B, its line in runs.jsonl
  local label=$1 code=0 t0
  shift
  t0=$(date +%s)
  scripts/perfci ab "$@" --out "$out/$label" --json "$out/$label/verdict.json" -q >"$out/$label.md" 2>"$out/$label.err" \
    || code=$?
  printf '{"label": "%s", "args": "%s", "exit": %d, "seconds": %d, "engine": "%s"}\n' \
    "$label" "$*" "$code" "$(( $(date +%s) - t0 ))" "$commit" >>"$out/runs.jsonl"
}
case $mode in
  stability)
    servers=("$@")
    [ ${#servers[@]} -gt 0 ] || servers=(local mysql-8.0.31)
    scenarios=(microbench rebuild-after-delete)
    [ -z "${PHASES:-}" ] || scenarios=(microbench)
    for server in "${servers[@]}"; do
      for scenario in "${scenarios[@]}"; do
        args=()
        [ "$scenario" != microbench ] || args=("${phase_args[@]}")
        ab "$scenario-$server-work" "$scenario" "${args[@]}" --a "$server" --b "$server" --measure work \
          --work-counter callgrind --instances 2 --bursts "${BURSTS:-6}"
        ab "$scenario-$server-time" "$scenario" "${args[@]}" --a "$server" --b "$server" --instances 1 --bursts 4
      done
    done ;;
  aa)
    n=$1
    shift
    servers=("$@")
    [ ${#servers[@]} -gt 0 ] || servers=(local mysql-8.0.31)
    phases=(point-query range-sum full-scan update-index insert read-write random-points delete-insert)
    for i in $(seq "${FIRST:-1}" "$n"); do  # FIRST: go on from a campaign cut short
      for server in "${servers[@]}"; do
        if (( i % 3 == 0 )); then
          ab "aa$i-$server-rebuild" rebuild-after-delete --a "$server" --b "$server" --measure work \
            --work-counter callgrind --budget-minutes "${BUDGET:-3}"
        else
          phase=${phases[$(( i % ${#phases[@]} ))]}
          ab "aa$i-$server-$phase" microbench --phase "$phase" --a "$server" --b "$server" --measure work \
            --work-counter callgrind --budget-minutes "${BUDGET:-3}"
        fi
      done
    done ;;
  effects)
    # `--measure both` (a counting A/B, then a timed one): what moves the statement path
    # (performance_schema's instrumentation on every statement) is more code; a slowdown that
    # is not the server's code (B's server held to 40 % of a CPU by a cgroup quota:
    # benchmarks/throttle-side.sh) is the same work taking longer. Arguments: which (default both)
    effects=("$@")
    [ ${#effects[@]} -gt 0 ] || effects=(pfs throttled)
    for effect in "${effects[@]}"; do
      case $effect in
        pfs) ab pfs-both microbench --phase point-query --b-config performance_schema=ON --measure both \
               --work-counter callgrind --budget-minutes "${BUDGET:-6}" ;;
        throttled)
          benchmarks/throttle-side.sh b 40 &
          throttle=$!
          ab throttled-both microbench --phase point-query --measure both --work-counter callgrind \
            --budget-minutes "${BUDGET:-6}"
          kill "$throttle"; wait "$throttle" || true ;;
      esac
    done ;;
  planted)
    # the real MariaDB tree (PERFCI_BUILD_REPO: scripts/debian-source-repo, then
    # docs/findings/data/2026-11-26-build-from-source/plant-line.py and its --one-percent line):
    # the ~10 % planted commit against its parent by a work A/B of the full scan within 5
    # minutes, then a commit bisect by work over the ~1 % line (BUDGET per step)
    repo=${PERFCI_BUILD_REPO:?the MariaDB tree with the planted lines}
    at() { git -C "$repo" rev-parse "$1"; }
    # built first (the first cold: ~17 min on 2 cores), so the A/Bs' minutes are measuring only
    for ref in perfci/planted-line~7 perfci/planted-line~6 perfci/planted-1pct~5 perfci/planted-1pct~4; do
      scripts/build-server mariadb "$(at "$ref")" >>"$out/builds.log" 2>&1
    done
    ab planted10-work microbench --phase full-scan --a "build:mariadb@$(at perfci/planted-line~7)" \
      --b "build:mariadb@$(at perfci/planted-line~6)" --measure work --work-counter callgrind --budget-minutes 5
    # (the ~1 % commit against its parent: the bisect's last step, which verifies what it names)
    t0=$(date +%s)
    code=0
    scripts/perfci bisect microbench --phase full-scan --good "build:mariadb@$(at 'perfci/planted-1pct~12')" \
      --bad "build:mariadb@$(at perfci/planted-1pct)" --measure work --work-counter callgrind \
      --metric "$WORK_METRIC" --budget-minutes "${BUDGET:-4}" --out "$out/bisect" --json "$out/bisect.json" \
      >"$out/bisect.md" 2>"$out/bisect.err" || code=$?
    printf '{"label": "bisect-1pct", "exit": %d, "seconds": %d, "engine": "%s"}\n' "$code" "$(( $(date +%s) - t0 ))" \
      "$commit" >>"$out/runs.jsonl" ;;
  sweep)
    # instructions per transaction across releases, each against the line's oldest; PHASES
    # (space-separated) narrows microbench to those phases
    scripts/perfci sweep microbench --servers "${1:-mysql-5.7.22,mysql-8.0.12,mysql-8.0.15,mysql-8.0.31}" \
      "${phase_args[@]}" --measure work --work-counter callgrind --instances 1 --bursts "${BURSTS:-6}" --out "$out/${2:-mysql}" \
      --json "$out/${2:-mysql}.json" -q >"$out/${2:-mysql}.md" 2>"$out/${2:-mysql}.err" || true ;;
  *) echo "usage: $0 stability|aa|effects|planted|sweep ..." >&2; exit 2 ;;
esac
