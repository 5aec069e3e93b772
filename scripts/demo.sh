#!/usr/bin/env bash
# The demo: three simulated member clusters (member3 in Pull mode), the seed nginx
# Deployment split 1:2 over member1 and member2; member1 goes down, Flotilla detects it,
# taints it, evicts the workload and reschedules it onto member2; once member2 runs all 3
# replicas the graceful eviction task is dropped and the template reads 3/3. member1 comes
# back: its leftover copy and its Work are deleted, and nothing moves back.
# Exits 0 only if every step happened (each wait has a deadline).
set -euo pipefail
data_dir="${FLOTILLA_DEMO_DIR:-./.flotilla-demo}"
examples="${FLOTILLA_EXAMPLES:-examples}"
rm -rf "$data_dir"
trap 'flotilla down --data-dir "$data_dir" >/dev/null 2>&1 || true' EXIT

say() { printf '\n[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# until SECONDS_MAX DESCRIPTION COMMAND...: re-run COMMAND until it succeeds.
until_true() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "timed out waiting for $what" >&2; return 1; fi
    sleep 0.5
  done
}
cluster_ready() { flotillactl get clusters "$1" --no-headers | awk '{print $4}' | grep -qx "$2"; }
placed_rb() { flotillactl get rb "$1" -o wide --no-headers | awk '{print $5}' | grep -qx "$2"; }
placed() { placed_rb nginx-deployment "$1"; }
ready_in() { flotillactl member get deployments --clusters "$1" --no-headers 2>/dev/null | awk '{print $3}' | grep -qx "$2"; }
no_eviction_task() {
  flotillactl get rb nginx-deployment -o json \
    | python3 -c 'import json, sys; sys.exit(1 if json.load(sys.stdin)["spec"].get("gracefulEvictionTasks") else 0)'
}
template_ready() { flotillactl get deployments nginx --no-headers | awk '{print $2}' | grep -qx "$1"; }
untainted() { flotillactl get clusters "$1" -o json | python3 -c 'import json, sys; sys.exit(1 if json.load(sys.stdin)["spec"].get("taints") else 0)'; }
# Only from an answer without errors: an unreachable member must not read as "gone".
gone_from_member() {
  local out err
  err=$(mktemp)
  out=$(flotillactl member get deployments --clusters "$1" --no-headers 2>"$err") || { rm -f "$err"; return 1; }
  # An empty list says "No resources found" on stderr; anything else there is an unreachable member.
  if grep -qv '^No resources found' "$err"; then rm -f "$err"; return 1; fi
  rm -f "$err"
  ! grep -q '^nginx ' <<<"$out"
}
no_work_in() {
  local out
  out=$(flotillactl get works -n "karmada-es-$1" --no-headers 2>/dev/null) || return 1
  ! grep -q '^nginx-' <<<"$out"
}
# stays_for SECONDS DESCRIPTION COMMAND...: COMMAND holds at every check for SECONDS.
stays_for() {
  local until_s=$((SECONDS + $1)) what=$2
  shift 2
  while ((SECONDS < until_s)); do
    if ! "$@" >/dev/null 2>&1; then echo "no longer true: $what" >&2; return 1; fi
    sleep 0.5
  done
}

say "Starting etcd, the services and three simulated member clusters (demo timings)"
export_line=$(flotilla up --detach --sim-clusters 3 --profile demo --data-dir "$data_dir")
echo "$export_line"
eval "$export_line"
flotillactl status
for name in member1 member2 member3; do until_true 30 "$name Ready" cluster_ready "$name" True; done
flotillactl get clusters

say "Applying the nginx Deployment (3 replicas) and its PropagationPolicy (member1:1, member2:2)"
flotillactl apply -f "$examples/nginx-divided.yaml"
until_true 60 "nginx placed 1:2" placed member1:1,member2:2
until_true 60 "nginx ready in member2" ready_in member2 2/2
flotillactl get rb -o wide
flotillactl member get deployments

say "member1 goes down"
flotilla sim fault member1 down
until_true 30 "member1 NotReady" cluster_ready member1 False
flotillactl get clusters member1 -o wide
say "member1 is tainted; once the NoExecute taint outlasts the 5s toleration, nginx is evicted and rescheduled"
until_true 60 "nginx rescheduled to member2" placed member2:3
flotillactl get rb -o wide
until_true 60 "3 replicas ready in member2" ready_in member2 3/3
flotillactl member get deployments --clusters member2
flotillactl describe clusters member1 | sed -n '/^Conditions:/,$p'

say "member2 runs all 3 replicas: the graceful eviction task is dropped and the template reads 3/3"
until_true 90 "the graceful eviction task dropped" no_eviction_task
until_true 60 "the nginx template reading 3/3" template_ready 3/3
flotillactl get rb -o wide
flotillactl get deployments nginx
flotillactl describe rb nginx-deployment | sed -n '/^Events:/,$p'
say "member1's Work is deleted; member1 is down, so its copy there waits for it to come back"
flotillactl get works -A

say "member1 recovers: its leftover copy and its Work are deleted, and nothing moves back"
flotilla sim fault member1 recover
until_true 60 "member1 Ready" cluster_ready member1 True
until_true 60 "member1 untainted" untainted member1
until_true 90 "the leftover nginx deleted from member1" gone_from_member member1
until_true 60 "member1's Work gone" no_work_in member1
stays_for 5 "nginx stays on member2" placed member2:3
flotillactl get rb -o wide
flotillactl get works -A
flotillactl member get deployments
template_ready 3/3 || { echo "the nginx template no longer reads 3/3" >&2; exit 1; }

say "Application failover: an api Deployment split 1:1 over member2 and member3"
flotillactl apply -f "$examples/nginx-app-failover.yaml"
until_true 60 "api placed 1:1" placed_rb api-deployment member2:1,member3:1
until_true 60 "api ready in member3" ready_in member3 1/1
say "The api on member3 turns Unhealthy (its pods crash) while member3 itself stays Ready"
flotilla sim fault member3 app-unhealthy --namespace default --name api
until_true 60 "api moved off member3 after 5 s of Unhealthy" placed_rb api-deployment member2:2
flotillactl get clusters member3
flotillactl get rb api-deployment -o wide
flotillactl describe rb api-deployment | sed -n '/^Failover history:/,$p'

say "Stopping"
flotilla down --data-dir "$data_dir"
trap - EXIT
