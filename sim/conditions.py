"""Status conditions with Kubernetes' timestamp rules: lastTransitionTime moves only when the
status flips; lastUpdateTime (where a type has it) whenever reason or message change."""

from __future__ import annotations

from typing import Any


def set_condition(conditions: list[dict[str, Any]], type_: str, status: str, reason: str, message: str, now: str,
                  update_time: bool = False, probe_time: bool = False) -> list[dict[str, Any]]:
    """A new list with condition `type_` set; the others keep their order and content."""
    previous = next((c for c in conditions if c.get("type") == type_), None)
    condition: dict[str, Any] = {"type": type_, "status": status}
    if probe_time:
        condition["lastProbeTime"] = None
    if previous is None:
        if update_time:
            condition["lastUpdateTime"] = now
        condition["lastTransitionTime"] = now
    else:
        if update_time:
            unchanged = (previous.get("status"), previous.get("reason", ""), previous.get("message", "")) == (
                status, reason, message)
            condition["lastUpdateTime"] = previous.get("lastUpdateTime", now) if unchanged else now
        flipped = previous.get("status") != status
        condition["lastTransitionTime"] = now if flipped else previous.get("lastTransitionTime", now)
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    if previous is None:
        return [*conditions, condition]
    return [condition if c is previous else c for c in conditions]


def condition_status(conditions: list[dict[str, Any]] | None, type_: str) -> str | None:
    for condition in conditions or []:
        if condition.get("type") == type_:
            return condition.get("status")
    return None
