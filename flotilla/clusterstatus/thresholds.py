"""The threshold filter that keeps a flapping cluster from flapping its Ready condition
(docs/karmada-rules.md §3 step 4).

A change across the True / not-True boundary becomes visible only once it has
been observed continuously for the threshold (success threshold towards True,
failure threshold away from it); any bounce back restarts the window. The
filter's memory is per cluster and in memory, as Karmada's is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flotilla.api.conditions import TRUE
from flotilla.clusterstatus.observation import ReadyObservation

# A Push member's probe is stamped with its tick (services/status/push.py): the wall clock less
# the lag read off the monotonic one, two reads whose difference wanders by microseconds. Stamps
# a whole number of periods apart can come out a few microseconds short of it, and without a
# tolerance a failure observed for exactly the threshold (three ticks of a 3 s threshold) would
# be held back to the next probe, a period late. A millisecond is far below any probe period.
STAMP_TOLERANCE = timedelta(milliseconds=1)


@dataclass(frozen=True)
class ThresholdState:
    """The last observed status and since when it has been observed (None: since forever)."""

    status: str
    since: datetime | None


@dataclass(frozen=True)
class Thresholds:
    success: timedelta
    failure: timedelta


def filter_ready(
    observed: ReadyObservation,
    persisted: ReadyObservation | None,
    state: ThresholdState | None,
    now: datetime,
    thresholds: Thresholds,
) -> tuple[ReadyObservation, ThresholdState]:
    """Which Ready condition to publish now, and the filter's new memory."""
    if state is None:
        # First sight of this cluster (or of this process): nothing to hold back against.
        return observed, ThresholdState(observed.status, None)
    if persisted is None:
        return observed, state if state.status == observed.status else ThresholdState(observed.status, now)
    if state.status != observed.status:
        state = ThresholdState(observed.status, now)
    crosses = (observed.status == TRUE) != (persisted.status == TRUE)
    if crosses and state.since is not None and now < _visible_at(observed, state.since, thresholds):
        return persisted, state
    return observed, state


def time_until_visible(
    observed: ReadyObservation, state: ThresholdState, now: datetime, thresholds: Thresholds
) -> timedelta | None:
    """How long until a held-back observation would be published (for inspection)."""
    if state.since is None:
        return None
    remaining = _visible_at(observed, state.since, thresholds) - now
    return remaining if remaining > timedelta(0) else None


def _visible_at(observed: ReadyObservation, since: datetime, thresholds: Thresholds) -> datetime:
    """When an observation held since `since` has lasted its threshold."""
    threshold = thresholds.success if observed.status == TRUE else thresholds.failure
    return since + threshold - STAMP_TOLERANCE
