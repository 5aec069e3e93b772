"""Errors the object store raises; each names the object it is about."""


class StoreError(Exception):
    pass


class NotFound(StoreError):
    pass


class AlreadyExists(StoreError):
    pass


class Conflict(StoreError):
    """The object changed since it was read: re-read and try again."""


class Unavailable(StoreError):
    """etcd could not be reached; the message names the address tried."""
