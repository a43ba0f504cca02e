#!/usr/bin/env bash
# A slowdown that is not the server's code, made on the host's side: every server process
# of one A/B side (its workdir's name holds `perfci-ab-<side>-`) is moved into a cgroup-v1
# CPU quota (QUOTA_PCT of one CPU), as a noisy container neighbour or a tight cgroup limit
# would slow it. The statements execute the same instructions; they take longer. Runs until
# killed; picks up the side's restarts (a counting A/B restarts its servers) within 0.2 s.
#   benchmarks/throttle-side.sh b [QUOTA_PCT=40] &
set -euo pipefail
side=${1:?side a or b}
quota=${2:-40}
group=/sys/fs/cgroup/cpu/perfci-throttle-$side
mkdir -p "$group"
# a 10 ms period: the quota is spread evenly over a burst of ~0.3 s (at 100 ms, whole bursts
# landed in or out of a throttled stretch: pairs spread past the limit, "unstable")
echo 10000 > "$group/cpu.cfs_period_us"
echo $(( quota * 100 )) > "$group/cpu.cfs_quota_us"
trap 'for p in $(cat "$group/cgroup.procs"); do echo "$p" > /sys/fs/cgroup/cpu/cgroup.procs || true; done; rmdir "$group"' EXIT
trap 'exit 0' TERM INT
while sleep 0.2; do
  for pid in $(pgrep -f "perfci-ab-$side-" || true); do
    grep -qx "$pid" "$group/cgroup.procs" || echo "$pid" > "$group/cgroup.procs" 2>/dev/null || true
  done
done
