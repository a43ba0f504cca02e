#!/bin/bash
# the confirm job again on the same two nights: its A/B sized for 10 minutes, the commit
# search given 25 minutes (what it does not finish is kept for the next night)
P=/work/main/docs/findings/data/2026-11-26-build-from-source/nightly-project
export PERFCI_ROOT=$P PERFCI_BUILD_REPO=/var/tmp/mariadb-repo PERFCI_EXPLAIN=never
W=/var/tmp/perfci-runs/nightly
cd $P
say() { echo "$1 $(date -u +%FT%TZ)" >> $W/times.txt; }
say "confirm (10-minute A/B, 25-minute search) start"
perfci confirm $W/tonight --baseline-dir $W/baselines --history $W/history --out $W/confirm --budget-minutes 10 \
  --culprit-minutes 25 --json $W/confirm.json > $W/confirm.out 2> $W/confirm.err; say "confirm rc=$?"
perfci nightly $W/tonight --history $W/history --baseline-dir $W/baselines --dry-run --out $W/issues \
  --confirmations $W/confirm --json $W/nightly.json > $W/nightly.out 2> $W/nightly.err; say "nightly rc=$?"
