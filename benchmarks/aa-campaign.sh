#!/usr/bin/env bash
# #35's proof on real runs: A/As of the design that ships (the default sized A/B with its
# interim look, explain off: it judges nothing), one microbench phase each, from a frozen
# worktree of the engine's commit, on a quiet machine. Each run's verdict JSON, report and
# bursts are kept under benchmarks/results/aa-campaign/<day>/, one line per run in
# runs.jsonl (engine commit, scenario, server, phase, exit, wall seconds). Run from the frozen
# worktree:
#   [PERFCI_AA_SCENARIO=rebuild-after-delete] benchmarks/aa-campaign.sh SERVER MINUTES [PHASE...]
# (SERVER: local, mysql-8.0.31, ...; it stops starting new A/As after MINUTES; the scenario is
# microbench unless PERFCI_AA_SCENARIO names another, whose A/As run every phase unless PHASEs
# are given: rebuild-after-delete's two phases are one A/A of ~25 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
server=$1 minutes=$2
shift 2
scenario=${PERFCI_AA_SCENARIO:-microbench}
phases=("$@")
if [ ${#phases[@]} -eq 0 ]; then
  if [ "$scenario" = microbench ]; then phases=(point-query range-sum full-scan update-index insert read-only)
  else phases=(all); fi
fi
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- ci scripts requirements.lock)" ] || { echo "the engine is not a clean commit" >&2; exit 2; }
day=$(date -u +%Y-%m-%d)
out=benchmarks/results/aa-campaign/$day
mkdir -p "$out"
deadline=$(( $(date +%s) + minutes * 60 ))
i=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  phase=${phases[$(( i % ${#phases[@]} ))]}
  i=$(( i + 1 ))
  id=$(date -u +%Y%m%dT%H%M%SZ)-$server-$phase
  [ "$scenario" = microbench ] || id=$(date -u +%Y%m%dT%H%M%SZ)-$server-$scenario-$phase
  phase_args=(--phase "$phase")
  [ "$phase" != all ] || phase_args=()
  started=$(date +%s)
  code=0
  PERFCI_EXPLAIN=never scripts/perfci ab "$scenario" --a "$server" --b "$server" "${phase_args[@]}" \
    --out "$out/$id" --report "$out/$id.md" --json "$out/$id.json" -q || code=$?
  for f in "$out/$id"/*.bursts.json; do [ -f "$f" ] && gzip -f "$f"; done
  printf '{"id": "%s", "engine": "%s", "scenario": "%s", "server": "%s", "phase": "%s", "exit": %d, "wall_s": %d}\n' \
    "$id" "$commit" "$scenario" "$server" "$phase" "$code" "$(( $(date +%s) - started ))" >> "$out/runs.jsonl"
done
