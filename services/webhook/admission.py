"""The write path: parse, default, validate, then create or update with compare-and-swap.

A user's document owns spec, labels and annotations; the server owns uid,
creation time, generation, resourceVersion and status, and controllers own
the finalizers they added, so an apply keeps those from the stored object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from google.protobuf.message import Message

from flotilla.aio.clock import Clock
from flotilla.api import codec, registry
from flotilla.api.codec import CodecError, FieldError
from flotilla.store import Conflict, ObjectStore
from flotilla.store.base import meta_of
from services.webhook.defaulting import AdmissionConfig, default_object
from services.webhook.rules.karmada_fields import field_warnings
from services.webhook.validation import validate_object

CREATED, CONFIGURED, UNCHANGED = "created", "configured", "unchanged"
# The verbs RBAC authorizes a write as.
CREATE, UPDATE, DELETE = "create", "update", "delete"
# Who last applied the object: the client certificate's common name (services/webhook/servicer.py).
APPLIED_BY_ANNOTATION = "flotilla.io/applied-by"
DELETED, TERMINATING = "deleted", "terminating"


class Forbidden(Exception):
    """The caller may not write this object (the reason in Kubernetes' wording)."""


# Whether the caller may write the object with this verb (create, update): raises Forbidden if not.
Authorize = Callable[[str, Message], None]


@dataclass
class Review:
    obj: Message | None
    old: Message | None = None
    errors: list[FieldError] = field(default_factory=list)
    # `<path>: <why>` for each field admitted that has no effect (rules/karmada_fields.py).
    warnings: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.obj is not None and not self.errors


@dataclass
class Outcome:
    review: Review
    result: str = ""


class Admission:
    def __init__(self, store: ObjectStore, clock: Clock, config: AdmissionConfig | None = None) -> None:
        self.store = store
        self.clock = clock
        self.config = config or AdmissionConfig()

    async def review(self, doc: Any, validate: bool = True, authorize: Authorize | None = None) -> Review:
        """Parse, default and (optionally) validate a document against what is stored.
        `authorize` is asked first, with the write the document would be (create when nothing
        is stored under its name, update otherwise): a caller it refuses learns nothing of the
        stored object."""
        decoded = decode(doc)
        if decoded.obj is None:
            return decoded
        obj = decoded.obj
        meta = meta_of(obj)
        old = await self.store.try_get(registry.for_object(obj), meta.namespace, meta.name) if meta.name else None
        if authorize is not None:
            authorize(CREATE if old is None else UPDATE, obj)
        errors = admit(obj, old, self.config, self.clock.now(), validate)
        return Review(obj, old, errors, field_warnings(obj))

    async def apply(self, doc: Any, attempts: int = 5, applied_by: str = "",
                    authorize: Authorize | None = None) -> Outcome:
        """Create or update. Without a resourceVersion in the document, a conflict with
        a concurrent writer is retried from a fresh read; with one, it is the caller's.
        `applied_by` (the authenticated caller) is recorded on the object; without one, a
        document's own claim is dropped, as nothing vouches for it."""
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        pinned = isinstance(meta, dict) and bool(meta.get("resourceVersion"))
        for _ in range(attempts):
            review = await self.review(doc, authorize=authorize)
            if not review.allowed:
                return Outcome(review)
            obj = review.obj
            assert obj is not None
            annotations = meta_of(obj).annotations
            if applied_by:
                annotations[APPLIED_BY_ANNOTATION] = applied_by
            else:
                annotations.pop(APPLIED_BY_ANNOTATION, None)
            try:
                if review.old is None:
                    review.obj = await self.store.create(obj)
                    return Outcome(review, CREATED)
                stored = await self.store.update(obj)
            except Conflict:
                if pinned:
                    raise
                continue
            review.obj = stored
            unchanged = meta_of(stored).resource_version == meta_of(review.old).resource_version
            return Outcome(review, UNCHANGED if unchanged else CONFIGURED)
        raise Conflict("the object kept changing while it was being applied; try again")

    async def delete(self, api_version: str, kind: str, namespace: str, name: str,
                     resource_version: str = "") -> tuple[str, Message]:
        """The result, and the object as it was (for the Event that records who deleted it)."""
        rt = deletable_type(api_version, kind)
        if rt.namespaced and not namespace:
            namespace = "default"
        namespace = namespace if rt.namespaced else ""
        current = await self.store.get(rt, namespace, name)
        remaining = await self.store.delete(rt, namespace, name, resource_version or None)
        return (DELETED if remaining is None else TERMINATING), current


def deletable_type(api_version: str, kind: str) -> registry.ResourceType[Any]:
    """The type a delete names. A karmada.io kind that is no longer taken for a template (issue
    36) may still be stored as one from before: it can be deleted, though never written again."""
    try:
        return registry.for_kind(api_version, kind)
    except registry.UnsupportedKindError:
        return registry.template_type(api_version, kind)


def decode(doc: Any) -> Review:
    """The document as an object in its scope (a namespaced one defaults to "default"),
    or a Review without one that lists why it does not parse."""
    try:
        obj = codec.from_dict(doc)
    except CodecError as e:
        return Review(None, errors=e.errors)
    except registry.UnknownResourceError as e:
        return Review(None, errors=[FieldError("kind", str(e))])
    rt = registry.for_object(obj)
    meta = meta_of(obj)
    if rt.namespaced and not meta.namespace:
        meta.namespace = "default"
    if not rt.namespaced:
        meta.namespace = ""
    return Review(obj)


def admit(obj: Message, old: Message | None, config: AdmissionConfig, now: datetime,
          validate: bool = True) -> list[FieldError]:
    """Default obj in place (keeping what the server owns of `old`, the stored object) and
    return every problem validation finds; the pure part of admission, without the store."""
    if old is not None:
        _keep_server_fields(obj, old)
    default_object(obj, old, config, now)
    return validate_object(obj, old, config) if validate else []


def _keep_server_fields(obj: Message, old: Message) -> None:
    meta, old_meta = meta_of(obj), meta_of(old)
    finalizers = list(old_meta.finalizers)
    finalizers += [f for f in meta.finalizers if f not in finalizers]
    del meta.finalizers[:]
    meta.finalizers.extend(finalizers)
    if not meta.resource_version:
        meta.resource_version = old_meta.resource_version
    if not meta.owner_references:
        meta.owner_references.extend(old_meta.owner_references)
