"""The one event an informer delivers: what happened to a typed object (`EventType`) and the
object, as `WatchEvent(type, obj, old)`. Stores, informers, the controller manager, routing
functions and member watches all speak it, so it lives on the API floor, below all of them.

Two other watch events exist and stay apart, because they are different things one floor down:

- `flotilla.store.base.KeyEvent`: one raw change of one etcd key (PUT or DELETE, the undecoded
  bytes and the revision). The informer turns a stream of them into `WatchEvent`s, deciding what
  a value that does not decode means; nothing above the store sees a `KeyEvent`.
- `flotilla.member.client.MemberWatchEvent`: one line of a Kubernetes watch stream from a member
  cluster, as the member sent it: its type is a string and may be BOOKMARK (a resourceVersion
  and no object change), its object a dict, and it carries no previous version. Member watches
  (flotilla/member/watches.py) fold them into their caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

__all__ = ["EventType", "WatchEvent"]

M = TypeVar("M")


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True)
class WatchEvent(Generic[M]):
    """One informer event. `obj` is the object as it is now, or as it was last seen for
    DELETED; `old` is the previous version for MODIFIED, None otherwise."""

    type: EventType
    obj: M
    old: M | None = None
