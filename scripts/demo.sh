#!/usr/bin/env bash
# The demo so far: three simulated member clusters joined (member3 in Pull mode),
# one goes down, Flotilla notices and taints it, it recovers and the taints go.
set -euo pipefail
data_dir="${FLOTILLA_DEMO_DIR:-./.flotilla-demo}"
rm -rf "$data_dir"
trap 'flotilla down --data-dir "$data_dir" >/dev/null 2>&1 || true' EXIT

say() { printf '\n[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# Wait (up to $2 seconds) until `flotillactl get clusters $1` shows READY $3.
wait_ready() {
  local deadline=$((SECONDS + $2))
  until flotillactl get clusters "$1" --no-headers 2>/dev/null | awk '{print $4}' | grep -qx "$3"; do
    if ((SECONDS > deadline)); then echo "timed out waiting for $1 READY=$3" >&2; return 1; fi
    sleep 0.5
  done
}

say "Starting etcd, the services and three simulated member clusters (demo timings)"
export_line=$(flotilla up --detach --sim-clusters 3 --profile demo --data-dir "$data_dir")
echo "$export_line"
eval "$export_line"
flotillactl status
for name in member1 member2 member3; do wait_ready "$name" 30 True; done
flotillactl get clusters

say "member1 goes down"
flotilla sim fault member1 down
wait_ready member1 30 False
flotillactl get clusters
flotillactl describe clusters member1 | sed -n '/^Conditions:/,$p'

say "member1 recovers"
flotilla sim fault member1 recover
wait_ready member1 30 True
flotillactl get clusters -o wide

say "Stopping"
flotilla down --data-dir "$data_dir"
trap - EXIT
