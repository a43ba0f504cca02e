#!/usr/bin/env bash
# #55's proof on real runs: A/As the way the nightly runs its reference A/B, end to end
# through `perfci confirm` and `perfci nightly`. One server under two specs (A: the spec the
# history's nights ran, B: tonight's; e.g. `local` and `local:/usr/sbin/mariadbd`): tonight's
# server "changed", so confirm A/Bs the reference (A) against tonight (B), sized at the
# nightly's level and budget, a many-phase case on the phases that looked worst; then the
# nightly judges the night with that confirmation. Every issue it writes, and every A/B
# that confirms a regression, is a false one.
#   benchmarks/confirm-aa.sh SPEC_A SPEC_B MINUTES [SCENARIO]   (default: microbench)
# Once per directory (kept, reused by a later call of the same day, engine and specs): two
# nights of SPEC_A into a history, tonight's run of SPEC_B (smoke profile, as the soak's
# compressed nights). Then A/As until MINUTES have passed (one started in time finishes):
# each confirms tonight against a fresh copy of that history and the nightly dry-runs it.
# Kept under benchmarks/results/confirm-aa/<day>-<engine>-<scenario>/: the nights, each
# A/A's confirmation (its bursts gzipped), nightly JSON and issues, and runs.jsonl (one line
# per A/A: exit codes, status, issues written, wall seconds). Run from a frozen worktree of
# the engine's commit, on a quiet machine; benchmarks/confirm_aa_report.py reads it.
set -euo pipefail
cd "$(dirname "$0")/.."
spec_a=$1 spec_b=$2 minutes=$3
scenario=${4:-microbench}
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- ci scripts requirements.lock)" ] || { echo "the engine is not a clean commit" >&2; exit 2; }
out=benchmarks/results/confirm-aa/$(date -u +%Y-%m-%d)-${commit:0:12}-$scenario
mkdir -p "$out"
export PERFCI_RUNNER_CLASS=confirm-aa PERFCI_EXPLAIN=never
# the reference A/B runs only servers this project pins (sessions/confirm.pinned_server): a
# project beside the results whose servers.yaml is this checkout's with SPEC_B pinned too
# (as a team pins tonight's build), its scenarios this checkout's
mkdir -p "$out/project"
ln -sfn "$PWD/scenarios" "$out/project/scenarios"
{ cat servers.yaml; printf '  - id: confirm-aa-b\n    spec: %s\n' "$spec_b"; } > "$out/project/servers.yaml"
export PERFCI_ROOT=$PWD/$out/project
deadline=$(( $(date +%s) + minutes * 60 ))
setup=$out/setup.json
if [ ! -f "$setup" ]; then
  rm -rf "$out/history" "$out/nights"
  mkdir -p "$out/history"
  for n in 1 2; do
    scripts/perfci run "$scenario" --profile smoke --server "$spec_a" --out "$out/nights/$n/results" -q >/dev/null
    scripts/perfci nightly "$out/nights/$n/results" --history "$out/history" --dry-run \
      --out "$out/nights/$n/issues" >/dev/null
  done
  scripts/perfci run "$scenario" --profile smoke --server "$spec_b" --out "$out/nights/tonight/results" -q \
    >/dev/null
  printf '{"engine": "%s", "scenario": "%s", "a": "%s", "b": "%s"}\n' "$commit" "$scenario" "$spec_a" "$spec_b" \
    > "$setup"
fi
while [ "$(date +%s)" -lt "$deadline" ]; do
  id=$(date -u +%Y%m%dT%H%M%SZ)
  aa=$out/aa/$id
  mkdir -p "$aa"
  cp -r "$out/history" "$aa/history"
  started=$(date +%s)
  confirm=0 nightly=0
  scripts/perfci confirm "$out/nights/tonight/results" --history "$aa/history" --out "$aa/confirm" \
    --json "$aa/confirm.json" -q >/dev/null || confirm=$?
  confirmed_s=$(( $(date +%s) - started ))
  scripts/perfci nightly "$out/nights/tonight/results" --history "$aa/history" --dry-run --out "$aa/issues" \
    --confirmations "$aa/confirm" --json "$aa/nightly.json" >/dev/null || nightly=$?
  rm -rf "$aa/history"  # a copy of the setup's, plus tonight: the nightly JSON says what it did
  for f in "$aa"/confirm/*.bursts.json "$aa"/confirm/*/*.bursts.json; do [ -f "$f" ] && gzip -f "$f"; done
  status=$(python3 -c 'import json, sys, glob
found = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/*.confirmation.json")]
print(",".join(c["status"] for c in found) or "none")' "$aa/confirm")
  issues=0
  [ ! -d "$aa/issues" ] || issues=$(find "$aa/issues" -name '*.md' | wc -l)
  printf '{"id": "%s", "engine": "%s", "scenario": "%s", "a": "%s", "b": "%s", "confirm": %d, "nightly": %d, "status": "%s", "issues": %d, "confirm_s": %d, "wall_s": %d}\n' \
    "$id" "$commit" "$scenario" "$spec_a" "$spec_b" "$confirm" "$nightly" "$status" "$issues" "$confirmed_s" \
    "$(( $(date +%s) - started ))" >> "$out/runs.jsonl"
done
