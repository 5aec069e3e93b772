"""Whose a member object is, and so what the execution controller may do to it (docs/karmada-rules.md §11).

Karmada's object watcher updates an object already in the member only when it is Karmada's
(label `karmada.io/managed: "true"`) or when the Work says `work.karmada.io/conflict-resolution:
overwrite`, and deletes only what is Karmada's. Flotilla decides from the member object alike,
from the marks its own applies leave there:

- A manifest made from a binding carries that binding's permanent-id label
  (`resourcebinding.karmada.io/permanent-id` or the cluster one, a UUID of this plane): the
  member object is Flotilla's when it carries the same label with the same value. Every apply
  of every Flotilla version has stamped it, so objects applied before this rule are still known
  for Flotilla's; an object of another binding, of another plane, or made by hand is not.
- A manifest of a Work made by hand (no binding label): Karmada's rule, the
  `karmada.io/managed: "true"` label the executor stamps on everything it applies.

Pure functions of the member object and the manifest; the execution controller reads the one
and sends what `stamped` makes of the other.
"""

from __future__ import annotations

import enum
from typing import Any

from flotilla.api.wellknown import (
    CONFLICT_RESOLUTION_ANNOTATION,
    CRB_PERMANENT_ID_LABEL,
    MANAGED_LABEL,
    RB_PERMANENT_ID_LABEL,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
)

MANAGED_VALUE = "true"
OVERWRITE = "overwrite"
_BINDING_LABELS = (RB_PERMANENT_ID_LABEL, CRB_PERMANENT_ID_LABEL)


class Apply(enum.Enum):
    CREATE = "create"  # nothing there: the apply creates it
    UPDATE = "update"  # Flotilla's: applied over
    ADOPT = "adopt"  # not Flotilla's, and the Work says overwrite: taken over, Flotilla's from then on
    ABORT = "abort"  # not Flotilla's: left as it is, the Work reports the conflict


class Delete(enum.Enum):
    ABSENT = "absent"  # nothing to delete
    DELETE = "delete"  # Flotilla's: deleted
    LEAVE = "leave"  # not Flotilla's: left in place


def _labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = (obj.get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def owned(observed: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether the member object `observed` is Flotilla's, for the Work manifest `desired`."""
    have, want = _labels(observed), _labels(desired)
    for label in _BINDING_LABELS:
        if want.get(label):
            return bool(have.get(label) == want[label])
    return bool(have.get(MANAGED_LABEL) == MANAGED_VALUE)


def conflict_resolution(desired: dict[str, Any]) -> str:
    """The Work's `work.karmada.io/conflict-resolution`: only `overwrite` takes an object over
    (anything else, or nothing, aborts, as in Karmada's allowUpdate)."""
    return str(_annotations(desired).get(CONFLICT_RESOLUTION_ANNOTATION) or "")


def apply_decision(observed: dict[str, Any] | None, desired: dict[str, Any]) -> Apply:
    if observed is None:
        return Apply.CREATE
    if owned(observed, desired):
        return Apply.UPDATE
    return Apply.ADOPT if conflict_resolution(desired) == OVERWRITE else Apply.ABORT


def delete_decision(observed: dict[str, Any] | None, desired: dict[str, Any]) -> Delete:
    if observed is None:
        return Delete.ABSENT
    return Delete.DELETE if owned(observed, desired) else Delete.LEAVE


def stamped(manifest: dict[str, Any], work_namespace: str, work_name: str) -> dict[str, Any]:
    """The manifest as applied: with Karmada's managed label and the Work's name, which the
    member object then carries (Karmada's CreateOrUpdateWork puts the same marks on it)."""
    metadata = dict(manifest.get("metadata") or {})
    metadata["labels"] = {**_labels(manifest), MANAGED_LABEL: MANAGED_VALUE}
    metadata["annotations"] = {**_annotations(manifest), WORK_NAMESPACE_ANNOTATION: work_namespace,
                               WORK_NAME_ANNOTATION: work_name}
    return {**manifest, "metadata": metadata}


def identity(manifest: dict[str, Any]) -> str:
    """`kind=Deployment, default/nginx`, as Karmada names a resource in its messages."""
    meta = manifest.get("metadata") or {}
    return f"kind={manifest.get('kind', '')}, {meta.get('namespace', '')}/{meta.get('name', '')}"


def conflict_message(manifest: dict[str, Any], cluster: str) -> str:
    """Karmada's objectwatcher message for an object it will not update (there it always says the
    strategy value is "empty"; here it names the value the Work carries)."""
    value = conflict_resolution(manifest) or "empty"
    return (f"resource({identity(manifest)}) already exists in the cluster {cluster} and the "
            f"{CONFLICT_RESOLUTION_ANNOTATION} strategy value is {value}, Flotilla will not manage this resource")


def preconditions(observed: dict[str, Any]) -> dict[str, str]:
    """DeleteOptions.preconditions for the object as read: a delete refused (409) if it has been
    replaced or changed since, so a foreign object made in between is never deleted."""
    meta = observed.get("metadata") or {}
    found = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    return {k: str(v) for k, v in found.items() if v}
