"""The permanent-id label: a policy's identity that survives delete-and-recreate of the same name.

Bindings record which policy claimed them by this label, so it is set once
and never changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.meta_pb2 import ObjectMeta
from services.webhook.rules.fields import child, key, required


def default_permanent_id(meta: ObjectMeta, old_meta: ObjectMeta | None, label: str) -> None:
    """CREATE: a new UUID unless the object already has one. UPDATE: the stored value, if the update dropped it.

    Keeping a value already present makes the defaulting idempotent (an
    object admitted twice keeps the ID it got the first time); a changed
    value is left for validation to refuse.
    """
    if meta.labels.get(label):
        return
    if old_meta is None:
        meta.labels[label] = str(uuid.uuid4())
    elif old_meta.labels.get(label):
        meta.labels[label] = old_meta.labels[label]


def validate_permanent_id(meta: ObjectMeta, old_meta: ObjectMeta | None, label: str) -> Iterator[FieldError]:
    path = key(child("metadata", "labels"), label)
    value = meta.labels.get(label, "")
    if not value:
        yield required(path)
        return
    previous = old_meta.labels.get(label, "") if old_meta is not None else ""
    if previous and value != previous:
        yield FieldError(path, f'field is immutable: the permanent-id label may not change (was "{previous}")')
