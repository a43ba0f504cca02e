#!/usr/bin/env bash
# The server-code PR check of the real MariaDB tree, through `perfci pr-check server-code`,
# its builds and servers in the sandbox (as root: setpriv to the bare account 64201).
set -u
out=${1:?OUT}; base=${2:?BASE}; head=${3:?HEAD}
export PERFCI_SANDBOX_USER=64201:64201 PERFCI_CACHE=/var/lib/perfci-pr/cache PERFCI_MEASURE=time
mirror=$PERFCI_CACHE/src/server-pr-mirror.git
mkdir -p "$out"
cd /var/tmp/mariadb-pr
start=$(date +%s)
/work/main/scripts/perfci pr-fetch --mirror "$mirror" --url /var/tmp/mariadb-repo "$base" "$head" > "$out/pr-fetch.log" 2>&1
echo "pr-fetch exit $? in $(( $(date +%s) - start )) s" >> "$out/times.txt"
start=$(date +%s)
/work/main/scripts/perfci pr-check server-code --flavor mariadb --base "$base" --head "$head" --mirror "$mirror" \
  --scenarios microbench --phases full-scan --report-dir "$out/pr-report" --out "$out/results" > "$out/pr-check.out" 2> "$out/pr-check.err"
echo "pr-check exit $? in $(( $(date +%s) - start )) s" >> "$out/times.txt"
