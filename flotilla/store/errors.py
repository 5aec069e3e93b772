"""Errors the object store raises; each names the object it is about."""

from typing import Any


class StoreError(Exception):
    pass


class NotFound(StoreError):
    pass


class AlreadyExists(StoreError):
    """`current`: the object in the way, when the store's answer to the create carried it
    (etcd's does: the create's transaction reads the key when it finds one)."""

    def __init__(self, message: str, current: Any = None) -> None:
        super().__init__(message)
        self.current = current


class Conflict(StoreError):
    """The object changed since it was read: re-read and try again."""


class Forbidden(StoreError):
    """The plane's API refused the caller (RBAC); the message is Kubernetes' wording of why."""


class Unavailable(StoreError):
    """etcd could not be reached; the message names the address tried."""


class Undecodable(StoreError):
    """A stored value that is not a valid object of its kind (written by some other tool).

    It names the kind and the etcd key, since the key is all one can act on.
    """

    def __init__(self, kind: str, key: str, reason: str = "") -> None:
        self.kind = kind
        self.key = key
        self.reason = reason
        detail = f": {reason}" if reason else ""
        super().__init__(f"{kind} at {key}: the stored value does not decode{detail}")


class Compacted(StoreError):
    """A watch asked for history the store no longer keeps: list again, then watch."""

    def __init__(self, compacted_revision: int) -> None:
        self.compacted_revision = compacted_revision
        super().__init__(f"revisions below {compacted_revision} were compacted")
