"""The health monitor for Pull clusters (docs/karmada-rules.md §4.1): a cluster whose agent stops
reporting turns Ready=Unknown after the grace period.

Push clusters are watched by this module too but never flipped: their prober
decides their condition.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flotilla.api.conditions import UNKNOWN
from flotilla.clusterstatus.observation import ReadyObservation

NEVER_UPDATED = ReadyObservation(
    UNKNOWN, "ClusterStatusNeverUpdated", "Cluster status controller never posted cluster status."
)
STOPPED_POSTING = ReadyObservation(
    UNKNOWN, "ClusterStatusUnknown", "Cluster status controller stopped posting cluster status."
)


@dataclass(frozen=True)
class ReadySnapshot:
    """The persisted Ready condition, compared whole (timestamps included)."""

    status: str
    reason: str
    message: str
    last_transition: datetime | None


@dataclass(frozen=True)
class MonitorState:
    probe_time: datetime
    saved_ready: ReadySnapshot | None
    saved_renew: datetime | None


@dataclass(frozen=True)
class Grace:
    monitor: timedelta
    startup: timedelta


def assess(
    *,
    ready: ReadySnapshot | None,
    created: datetime,
    pull: bool,
    lease_renew: datetime | None,
    state: MonitorState | None,
    now: datetime,
    grace: Grace,
) -> tuple[ReadyObservation | None, MonitorState]:
    """The Unknown condition to write (None: leave it), and the monitor's new memory."""
    if ready is None:
        period = grace.startup
        if state is None:
            state = MonitorState(created, None, None)
    else:
        period = grace.monitor
        if state is None or state.saved_ready != ready:
            state = MonitorState(now, ready, state.saved_renew if state else None)
    if not pull:
        return None, state
    if lease_renew is not None and (state.saved_renew is None or lease_renew > state.saved_renew):
        state = MonitorState(now, state.saved_ready, lease_renew)
    if now <= state.probe_time + period:
        return None, state
    if ready is None:
        return NEVER_UPDATED, state
    if ready.status != UNKNOWN:
        return STOPPED_POSTING, state
    return None, state
