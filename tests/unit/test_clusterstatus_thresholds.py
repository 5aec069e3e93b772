"""The Ready threshold filter (docs/karmada-rules.md §3 step 4), probe by probe on a fake timeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flotilla.clusterstatus.observation import HEALTHY, NOT_REACHABLE, NOT_READY, ReadyObservation, observe
from flotilla.clusterstatus.thresholds import Thresholds, ThresholdState, filter_ready

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PERIOD = timedelta(seconds=10)
THRESHOLDS = Thresholds(success=timedelta(seconds=30), failure=timedelta(seconds=30))


def run(probes: list[ReadyObservation], persisted: ReadyObservation = HEALTHY) -> list[str]:
    """Feed one observation per period; return the published status after each."""
    state = ThresholdState(persisted.status, None)
    published = []
    for i, observed in enumerate(probes):
        shown, state = filter_ready(observed, persisted, state, T0 + i * PERIOD, THRESHOLDS)
        persisted = shown
        published.append(shown.status)
    return published


def test_probe_outcomes() -> None:
    assert observe(online=False, healthy=False) == NOT_REACHABLE
    assert observe(online=True, healthy=False) == NOT_READY
    assert observe(online=True, healthy=True) == HEALTHY
    assert NOT_REACHABLE.status == "False"  # never Unknown from the prober


def test_single_failed_probe_does_not_flip() -> None:
    assert run([HEALTHY, NOT_REACHABLE, HEALTHY, HEALTHY]) == ["True"] * 4


def test_failure_lasting_the_threshold_flips() -> None:
    # Observed False from t=10; visible once now >= since + 30s, i.e. at the probe at t=40.
    published = run([HEALTHY] + [NOT_REACHABLE] * 5)
    assert published == ["True", "True", "True", "True", "False", "False"]


def test_recovery_needs_the_success_threshold() -> None:
    published = run([NOT_REACHABLE] * 2 + [HEALTHY] * 5, persisted=NOT_REACHABLE)
    assert published == ["False", "False", "False", "False", "False", "True", "True"]


def test_flapping_every_probe_never_flips() -> None:
    assert set(run([HEALTHY, NOT_REACHABLE] * 10)) == {"True"}


def test_false_to_false_changes_are_not_delayed() -> None:
    shown, _ = filter_ready(NOT_READY, NOT_REACHABLE, ThresholdState("False", T0), T0, THRESHOLDS)
    assert shown == NOT_READY


def test_first_sight_and_missing_condition_publish_at_once() -> None:
    shown, state = filter_ready(NOT_REACHABLE, HEALTHY, None, T0, THRESHOLDS)
    assert shown == NOT_REACHABLE and state == ThresholdState("False", None)
    shown, _ = filter_ready(HEALTHY, None, ThresholdState("False", T0), T0, THRESHOLDS)
    assert shown == HEALTHY


def test_a_bounce_restarts_the_window() -> None:
    probes = [HEALTHY, NOT_REACHABLE, NOT_REACHABLE, HEALTHY] + [NOT_REACHABLE] * 4
    published = run(probes)
    assert published[:7] == ["True"] * 7
    assert published[7] == "False"


@pytest.mark.parametrize(("held_for", "published"), [
    (timedelta(seconds=30), "False"),
    (timedelta(seconds=30, microseconds=-7), "False"),   # stamps read off two clocks, microseconds apart
    (timedelta(seconds=30, milliseconds=-2), "True"),    # short of the threshold: held back
    (timedelta(seconds=29), "True"),
])
def test_a_failure_held_for_the_threshold_flips_whatever_microseconds_the_stamps_lost(
        held_for: timedelta, published: str) -> None:
    shown, _ = filter_ready(NOT_REACHABLE, HEALTHY, ThresholdState("False", T0), T0 + held_for, THRESHOLDS)
    assert shown.status == published
