#!/bin/bash
cd /work/main
start=$(date +%s)
scripts/perfci ab rebuild-after-delete --b-config innodb_flush_log_at_trx_commit=1 --size profile --explain auto \
  --a-config performance_schema=ON --b-config performance_schema=ON --out /tmp/findings/flush > /tmp/findings/flush.out 2> /tmp/findings/flush.err
echo "rc=$? wall=$(( $(date +%s) - start ))" > /tmp/findings/flush.meta
