#!/bin/bash
# built vs released (the same version), then the commit bisect over the planted line
export PERFCI_BUILD_REPO=/var/tmp/mariadb-repo
cd /work/main
OUT=/var/tmp/perfci-runs
date -u +"built-vs-released start %FT%TZ" >> $OUT/times.txt
perfci ab microbench --a local:/var/tmp/deb-10.11.18/root/usr --b build:mariadb@70ad4dcbb6449061b2ea851a020d2fbfe18d2854 \
  --phase point-query --phase range-covered --phase full-scan --phase insert --phase read-write --budget-minutes 14 \
  --out $OUT/built-vs-released --report $OUT/built-vs-released.md --json $OUT/built-vs-released.json \
  > $OUT/built-vs-released.out 2> $OUT/built-vs-released.err
echo "built-vs-released rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
PERFCI_EXPLAIN=never perfci bisect microbench --good build:mariadb@70ad4dcbb6449061b2ea851a020d2fbfe18d2854 \
  --bad build:mariadb@perfci/planted-line --phase full-scan --metric tps --budget-minutes 6 \
  --out $OUT/bisect --json $OUT/bisect.json > $OUT/bisect.out 2> $OUT/bisect.err
echo "bisect rc=$? $(date -u +%FT%TZ)" >> $OUT/times.txt
