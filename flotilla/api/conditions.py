"""metav1.Condition lists, with Kubernetes' meta.SetStatusCondition semantics."""

from __future__ import annotations

from collections.abc import Iterable, MutableSequence
from datetime import UTC, datetime

from flotilla.api.v1.meta_pb2 import Condition

TRUE = "True"
FALSE = "False"
UNKNOWN = "Unknown"


def get_condition(conditions: Iterable[Condition], type_: str) -> Condition | None:
    for condition in conditions:
        if condition.type == type_:
            return condition
    return None


def condition_status(conditions: Iterable[Condition], type_: str) -> str:
    """The condition's status, or "" when it is absent."""
    condition = get_condition(conditions, type_)
    return condition.status if condition is not None else ""


def is_true(conditions: Iterable[Condition], type_: str) -> bool:
    return condition_status(conditions, type_) == TRUE


def set_condition(
    conditions: MutableSequence[Condition],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int = 0,
) -> bool:
    """Add or update a condition in place; return whether anything changed.

    lastTransitionTime moves to `now` only when the status changes (or the
    condition is new), so it says how long the current status has held.
    """
    existing = get_condition(conditions, type_)
    if existing is None:
        condition = Condition(
            type=type_, status=status, reason=reason, message=message, observed_generation=observed_generation
        )
        _stamp(condition, now)
        conditions.append(condition)
        return True
    changed = False
    if existing.status != status:
        existing.status = status
        _stamp(existing, now)
        changed = True
    for field, value in (("reason", reason), ("message", message), ("observed_generation", observed_generation)):
        if getattr(existing, field) != value:
            setattr(existing, field, value)
            changed = True
    return changed


def remove_condition(conditions: MutableSequence[Condition], type_: str) -> bool:
    for i, condition in enumerate(conditions):
        if condition.type == type_:
            del conditions[i]
            return True
    return False


def _stamp(condition: Condition, now: datetime) -> None:
    # metav1.Time has second precision on the wire; truncating here keeps a
    # stored condition equal to the same condition after a JSON round trip.
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    condition.last_transition_time.FromSeconds(int(now.timestamp()))
