#!/usr/bin/env bash
# #35's soak: NIGHTS compressed nights of an unchanged server through the nightly's own
# commands, as its workflow runs them — per night, every scenario's run (bench job:
# `perfci run`, `perfci confirm`), then one `perfci nightly --dry-run` over the night's
# results (report job: history, triage, threshold and change-point issues into issues/).
# The server is the same every night (`local`: the distribution's MariaDB), so every issue
# written is a false one. Smoke profile (minutes, not the nightly profile's ~30): a night
# is compressed, its noise at least the nightly's. Run from a frozen worktree of the
# engine's commit, on a quiet machine:
#   benchmarks/soak-nights.sh NIGHTS [SCENARIO ...]   (default: rebuild-after-delete microbench)
# MEASURE=work: the nights' counted series instead (`perfci run --measure work`, callgrind),
# as the nightly runs it when its work-counter input names one; kept under
# <day>-<engine>-work/.
# Kept under benchmarks/results/soak/<day>-<engine>/: history/, issues/, every night's
# results and confirmations, and soak.jsonl (one line per night: exit codes, issues so far).
set -euo pipefail
cd "$(dirname "$0")/.."
nights=$1
shift
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(rebuild-after-delete microbench)
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- ci scripts requirements.lock)" ] || { echo "the engine is not a clean commit" >&2; exit 2; }
measure=${MEASURE:-time}
counting=()
suffix=
if [ "$measure" = work ]; then counting=(--measure work --work-counter callgrind); suffix=-work; fi
out=benchmarks/results/soak/$(date -u +%Y-%m-%d)-${commit:0:12}$suffix
mkdir -p "$out/history" "$out/issues"
export PERFCI_RUNNER_CLASS=soak PERFCI_EXPLAIN=never
for n in $(seq -w 1 "$nights"); do
  night=$out/nights/$n
  codes=()
  for scenario in "${scenarios[@]}"; do
    code=0
    scripts/perfci run "$scenario" --profile smoke --server local "${counting[@]}" --out "$night/results/$scenario" -q >/dev/null || code=$?
    codes+=("\"run $scenario\": $code")
  done
  code=0
  mkdir -p "$night/confirm"
  scripts/perfci confirm "$night"/results/* --history "$out/history" --out "$night/confirm" -q >/dev/null || code=$?
  codes+=("\"confirm\": $code")
  code=0
  scripts/perfci nightly "$night"/results/* --history "$out/history" --dry-run --out "$out/issues" \
    --confirmations "$night/confirm" --json "$night/nightly.json" >/dev/null || code=$?
  codes+=("\"nightly\": $code")
  issues=$(find "$out/issues" -name '*.md' | wc -l)
  printf '{"night": %d, "engine": "%s", "at": "%s", %s, "issues": %d}\n' "$((10#$n))" "$commit" \
    "$(date -u +%FT%TZ)" "$(IFS=,; echo "${codes[*]}")" "$issues" >> "$out/soak.jsonl"
done
