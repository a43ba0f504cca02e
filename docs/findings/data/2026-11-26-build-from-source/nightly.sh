#!/bin/bash
# A nightly over the planted line, by itself: the reference night (the line's base),
# tonight (the line's head), the confirm job (reference A/B + the commit search), the
# nightly's issues (dry run)
P=/work/main/docs/findings/data/2026-11-26-build-from-source/nightly-project
export PERFCI_ROOT=$P PERFCI_BUILD_REPO=/var/tmp/mariadb-repo PERFCI_EXPLAIN=never
W=/var/tmp/perfci-runs/nightly
mkdir -p $W/history
cd $P
say() { echo "$1 $(date -u +%FT%TZ)" >> $W/times.txt; }
say start
perfci run full-scan --server build:mariadb@70ad4dcbb6449061b2ea851a020d2fbfe18d2854 --out $W/reference > $W/reference.out 2> $W/reference.err; say "reference rc=$?"
perfci baseline update $W/reference --baseline-dir $W/baselines > $W/baseline.out 2>&1; say "baseline rc=$?"
perfci run full-scan --server mariadb-planted-line --out $W/tonight > $W/tonight.out 2> $W/tonight.err; say "tonight rc=$?"
perfci confirm $W/tonight --baseline-dir $W/baselines --history $W/history --out $W/confirm --budget-minutes 6 \
  --json $W/confirm.json > $W/confirm.out 2> $W/confirm.err; say "confirm rc=$?"
perfci nightly $W/tonight --history $W/history --baseline-dir $W/baselines --dry-run --out $W/issues \
  --confirmations $W/confirm --json $W/nightly.json > $W/nightly.out 2> $W/nightly.err; say "nightly rc=$?"
