#!/bin/bash
cd /work/main
start=$(date +%s)
scripts/perfci ab microbench --a mysql-8.0.15 --b mysql-8.0.31 --phase full-scan --size profile --explain always \
  --a-config performance_schema=ON --b-config performance_schema=ON --out /tmp/findings/mysql-ps > /tmp/findings/mysql-ps.out 2> /tmp/findings/mysql-ps.err
echo "rc=$? wall=$(( $(date +%s) - start ))" > /tmp/findings/mysql-ps.meta
