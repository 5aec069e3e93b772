"""Timing profiles for `flotilla up --profile`.

`default` is Karmada's timings. `demo` shortens every timing flag so that a
failed cluster is detected, tainted, evicted and replaced within seconds.
Profiles are `FLOTILLA_<FLAG>` environment values given to every process;
each service picks up the flags it has.
"""

from __future__ import annotations

PROFILES: dict[str, dict[str, str]] = {
    "default": {},
    "demo": {
        "FLOTILLA_CLUSTER_STATUS_UPDATE_FREQUENCY": "1s",
        "FLOTILLA_CLUSTER_FAILURE_THRESHOLD": "3s",
        "FLOTILLA_CLUSTER_SUCCESS_THRESHOLD": "3s",
        "FLOTILLA_CLUSTER_PROBE_TIMEOUT": "1s",
        # Probed every second, a member is still listed in full only every 5 s: listing it at every
        # probe would crowd the probes out (docs/performance.md, "What the defaults rest on").
        "FLOTILLA_CLUSTER_COLLECT_PERIOD": "5s",
        "FLOTILLA_CLUSTER_MONITOR_PERIOD": "1s",
        "FLOTILLA_CLUSTER_MONITOR_GRACE_PERIOD": "5s",
        "FLOTILLA_CLUSTER_STARTUP_GRACE_PERIOD": "10s",
        "FLOTILLA_CLUSTER_LEASE_DURATION": "4s",
        "FLOTILLA_CLUSTER_LEASE_RENEW_INTERVAL_FRACTION": "0.25",
        "FLOTILLA_FAILOVER_EVICTION_TIMEOUT": "5s",
        "FLOTILLA_GRACEFUL_EVICTION_TIMEOUT": "15s",
        "FLOTILLA_DEFAULT_NOT_READY_TOLERATION_SECONDS": "5",
        "FLOTILLA_DEFAULT_UNREACHABLE_TOLERATION_SECONDS": "5",
        "FLOTILLA_LEADER_ELECT_LEASE_DURATION": "3s",
        "FLOTILLA_ENDPOINT_TTL": "5s",
        "FLOTILLA_POD_READY_DELAY": "1s",
        "FLOTILLA_UNSCHEDULABLE_RETRY_PERIOD": "3s",
        "FLOTILLA_CAPACITY_RESERVATION_TTL": "5s",
        # A safety net against a missed member event, never a way of learning status: every few minutes.
        "FLOTILLA_WORK_STATUS_RESYNC_PERIOD": "3m",
    },
}
