"""Patch semantics: JSON merge patch, and the simulator's simplified server-side apply.

Server-side apply here assumes the applier owns every field it sends, which is what Flotilla's
force=true apply of a whole manifest amounts to: the applied object's top-level fields (spec,
data, rules, ...), labels and annotations replace the live ones; fields it leaves out are
removed; status and server-set metadata (uid, creationTimestamp, resourceVersion, generation,
ownerReferences and finalizers unless sent) stay. Real apply would keep fields other managers
own; no field-manager bookkeeping (managedFields) is kept.
"""

from __future__ import annotations

import copy
from typing import Any

_TYPE_FIELDS = ("apiVersion", "kind")
_APPLIED_METADATA = ("labels", "annotations")
_OPTIONAL_METADATA = ("ownerReferences", "finalizers")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_onto(live: dict[str, Any], applied: dict[str, Any], keep_status: bool) -> dict[str, Any]:
    """The object after `applied` is server-side applied onto `live` (see the module docstring)."""
    result = {key: copy.deepcopy(live[key]) for key in (*_TYPE_FIELDS, "metadata") if key in live}
    for key, value in applied.items():
        if key not in (*_TYPE_FIELDS, "metadata", "status"):
            result[key] = copy.deepcopy(value)
    if "status" in live and (keep_status or "status" not in applied):
        result["status"] = copy.deepcopy(live["status"])
    elif "status" in applied:
        result["status"] = copy.deepcopy(applied["status"])
    metadata = result.setdefault("metadata", {})
    sent = applied.get("metadata") or {}
    for key in _APPLIED_METADATA:
        if sent.get(key):
            metadata[key] = copy.deepcopy(sent[key])
        else:
            metadata.pop(key, None)
    for key in _OPTIONAL_METADATA:
        if key in sent:
            metadata[key] = copy.deepcopy(sent[key])
    return result


def spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but type, metadata and status: what a generation bump is about."""
    return {k: v for k, v in obj.items() if k not in (*_TYPE_FIELDS, "metadata", "status")}
