"""One member object applied or deleted only as its owner may (services/executor/ownership.py).

Each write is decided on the object as just read from the member and made conditional on it
staying that object, so nothing Flotilla does not own is written or deleted in between:

- apply: onto an existing object, with the resourceVersion that was read (a resourceVersion in a
  patch is a precondition; the server answers 409 if the object changed since). Creating has no
  such precondition (an apply with a resourceVersion that creates is refused by some servers):
  a foreign object made in the instant between the read that found nothing and the apply is
  overwritten, the same window Karmada's create from its cache has.
- delete: with DeleteOptions preconditions on the uid and resourceVersion that were read, so an
  object deleted and made again by someone else in between is not deleted.

A 409 means the object changed since it was read: it is read and decided again. An object that
cannot be read (member unreachable, an error answer) is never taken for absent: the MemberError
goes up and the Work is retried.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from flotilla.member import MemberClient, MemberError
from services.executor.ownership import (
    Apply,
    Delete,
    apply_decision,
    conflict_message,
    delete_decision,
    identity,
    preconditions,
    stamped,
)

log = logging.getLogger(__name__)

# Reads and writes of one object before giving up until the Work's next retry: a 409 means it
# changed between the read and the write (a controller in the member writing its status, say).
TRIES = 5


# (desired, observed) -> the object to write over the member's: a kind's ResourceInterpreterCustomization
# `retention` script (Karmada's Retain); raises RetainFailed when it has no answer.
Retain = Callable[[dict[str, Any], dict[str, Any]], Awaitable[dict[str, Any]]]


class RetainFailed(ValueError):
    """The kind's Retain script gave no answer: the member object is not written (the Work's
    apply fails with this message and is retried), never overwritten without what it keeps."""


class OwnershipConflict(Exception):
    """The member object is not Flotilla's and the Work does not say overwrite: left as it is.
    The message is Karmada's for the same refusal."""


@dataclass(frozen=True)
class Applied:
    answer: dict[str, Any]  # the object as the member answered the apply
    decision: Apply  # CREATE, UPDATE or ADOPT


def _address(manifest: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = manifest.get("metadata") or {}
    api_version, kind, name = manifest.get("apiVersion"), manifest.get("kind"), meta.get("name")
    if not api_version or not kind or not name:
        raise ValueError("apply needs apiVersion, kind and metadata.name")
    # As the apply places a namespaced object sent without a namespace (the client ignores it
    # for cluster-scoped kinds).
    return str(api_version), str(kind), str(meta.get("namespace") or "default"), str(name)


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


async def apply_owned(client: MemberClient, manifest: dict[str, Any], cluster: str, work_namespace: str,
                      work_name: str, retain: Retain | None = None) -> Applied:
    """Apply `manifest` unless the member holds a same-named object that is not Flotilla's and
    the Work does not say overwrite (OwnershipConflict). MemberError or ValueError otherwise.

    `retain`: over an existing object, what is written is `retain(manifest, observed)`, as
    Karmada's object watcher calls the kind's Retain before its update."""
    api_version, kind, namespace, name = _address(manifest)
    body = stamped(manifest, work_namespace, work_name)
    for _ in range(TRIES):
        observed = await client.get(api_version, kind, namespace, name)
        decision = apply_decision(observed, manifest)
        if decision is Apply.ABORT:
            raise OwnershipConflict(conflict_message(manifest, cluster))
        if decision is Apply.ADOPT:
            log.info("event=member-object-adopted cluster=%s object=%s work=%s/%s conflict_resolution=overwrite",
                     cluster, identity(manifest), work_namespace, work_name)
        if retain is not None and observed is not None:
            body = stamped(await retain(manifest, observed), work_namespace, work_name)
        try:
            answer = await client.apply(body, resource_version=_version(observed) if observed is not None else None)
        except MemberError as e:
            if e.status == 409 and observed is not None:
                continue  # changed since it was read: read it again
            raise
        return Applied(answer, decision)
    raise MemberError(client.server, f"apply {kind} {namespace}/{name}",
                      f"the object changed between each of {TRIES} reads and the apply", status=409,
                      reason="Conflict")


async def delete_owned(client: MemberClient, manifest: dict[str, Any], cluster: str) -> Delete:
    """Delete the member object `manifest` names if it is Flotilla's; what was found. MemberError
    when it cannot be read or deleted."""
    api_version, kind, namespace, name = _address(manifest)
    for _ in range(TRIES):
        observed = await client.get(api_version, kind, namespace, name)
        decision = delete_decision(observed, manifest)
        if decision is Delete.LEAVE:
            # Karmada's object watcher refuses these too ("not managed by Karmada").
            log.info("event=member-object-left cluster=%s object=%s reason=not-managed-by-flotilla",
                     cluster, identity(manifest))
        if observed is None or decision is not Delete.DELETE:
            return decision
        try:
            await client.delete(api_version, kind, namespace, name, preconditions=preconditions(observed))
        except MemberError as e:
            if e.status == 409:
                continue  # replaced or changed since it was read: read it again
            raise
        return decision
    raise MemberError(client.server, f"delete {kind} {namespace}/{name}",
                      f"the object changed between each of {TRIES} reads and the delete", status=409,
                      reason="Conflict")
