#!/bin/bash
cd /work/main
N=$(PYTHONPATH=ci:benchmarks scripts/python -c "
import sys; sys.path.insert(0,'benchmarks')
from test_bench_detection import md5_iteration_seconds, iterations_for
print(iterations_for(0.05, md5_iteration_seconds()))")
echo "iterations=$N" > /tmp/findings/trigger.meta
T="CREATE TRIGGER perfci_known_effect BEFORE UPDATE ON sbtest1 FOR EACH ROW SET @perfci_known_effect = BENCHMARK"
start=$(date +%s)
scripts/perfci ab rebuild-after-delete --a-sql "$T(0, MD5('perfci'))" --b-sql "$T($N, MD5('perfci'))" --explain auto --out /tmp/findings/trigger > /tmp/findings/trigger.out 2> /tmp/findings/trigger.err
echo "rc=$? wall=$(( $(date +%s) - start ))" >> /tmp/findings/trigger.meta
