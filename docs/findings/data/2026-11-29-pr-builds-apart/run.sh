#!/usr/bin/env bash
# Build times of the real MariaDB tree with the pull-request caches split (scripts/build-server,
# PERFCI_BUILD_SCRATCH): the base commit cold in the base builds' own tree and ccache store,
# then two PR commits, each in a scratch dir of its own (a fresh tree shown at the base
# tree's path, its own ccache over the store read-only). As root, the sandbox account a
# bare uid (64201), as in 2026-11-29-server-code-pr-check-sandboxed.md.
set -u
out=${1:?OUT}; base=${2:?BASE}; shift 2
export PERFCI_SANDBOX_USER=64201:64201 PERFCI_CACHE=/var/lib/perfci-pr/cache
export PERFCI_BUILD_REPO=$PERFCI_CACHE/src/server-pr-mirror.git PERFCI_BUILD_TRUSTED_COMMIT=$base
mkdir -p "$out"
build() {  # NAME SHA
  local start; start=$(date +%s)
  PERFCI_BUILD_SCRATCH=$PERFCI_CACHE/jobs/$1 /work/main/scripts/build-server mariadb "$2" > "$out/$1.basedir" 2> "$out/$1.err"
  echo "$1 $2 exit $? in $(( $(date +%s) - start )) s" >> "$out/times.txt"
}
mkdir -p "$PERFCI_CACHE/jobs"
build base "$base"
for head in "$@"; do build "pr-${head:0:12}" "$head"; done
