#!/bin/bash
cd /tmp/proj
for i in 4; do
  perfci run rebuild-after-delete --profile smoke --out /tmp/gap/hand-$i -q > /tmp/gap/hand-$i.log 2>&1
  echo "hand $i rc=$?" >> /tmp/gap/progress
  perfci act nightly --scenarios rebuild-after-delete > /tmp/gap/act-$i.log 2>&1
  echo "act $i rc=$?" >> /tmp/gap/progress
  mkdir -p /tmp/gap/act-$i && cp -r .perfci-act /tmp/gap/act-$i/ 2>/dev/null
done
echo done2 >> /tmp/gap/progress
