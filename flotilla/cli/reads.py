"""Reading objects for display without letting one bad stored value hide the rest.

A value in etcd that does not decode (written by an incompatible version, or
damaged) is named in one line, and every other object is still shown. The store
reports such values as `ListResult.undecodable` (keys it skipped) and raises a
StoreError subclass from `get`; with a store that does neither yet, a decoding
failure is caught here and the list is read one object at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from google.protobuf.message import DecodeError, Message

from flotilla.api import keys
from flotilla.api.registry import ResourceType
from flotilla.cli.errors import CLIError
from flotilla.store import Store, StoreError
from flotilla.store.base import meta_of
from flotilla.store.objects import matches_labels

UNDECODABLE = "stored value cannot be decoded"

M = TypeVar("M", bound=Message)


@dataclass
class Listed(Generic[M]):
    items: list[M]
    # Object keys (`namespace/name` or `name`) of values that did not decode.
    undecodable: list[str] = field(default_factory=list)


def is_undecodable(e: BaseException) -> bool:
    """Whether an error says a stored value does not decode (the store's error, or protobuf's)."""
    if isinstance(e, DecodeError) or type(e).__name__ == "Undecodable":
        return True
    return isinstance(e, StoreError) and "decod" in str(e).lower()


def undecodable_line(rt: ResourceType[Any], key: str) -> str:
    return f"error: {rt.singular} {key}: {UNDECODABLE}"


def object_key_of(rt: ResourceType[Any], key: str | bytes) -> str:
    """`ns/name` or `name` from an etcd key (`/flotilla/<resource>/ns/name`) or an object key."""
    text = key.decode() if isinstance(key, bytes) else key
    prefix = keys.etcd_prefix(rt.resource)
    return text[len(prefix):] if text.startswith(prefix) else text


async def list_objects(store: Store, rt: ResourceType[M], namespace: str | None = None,
                       selector: dict[str, str] | None = None) -> Listed[M]:
    try:
        result = await store.list(rt, namespace, selector)
    except Exception as e:
        if not is_undecodable(e):
            raise
        return await _list_one_by_one(store, rt, namespace, selector)
    skipped = getattr(result, "undecodable", None) or []
    return Listed(list(result.items), [object_key_of(rt, k) for k in skipped])


async def _list_one_by_one(store: Store, rt: ResourceType[M], namespace: str | None,
                           selector: dict[str, str] | None) -> Listed[M]:
    listed: Listed[M] = Listed([])
    prefix = keys.etcd_prefix(rt.resource, namespace if rt.namespaced else None).encode()
    for kv in await store.client.get_prefix(prefix):
        try:
            obj = store.decode(rt, kv.value, kv.mod_revision)
        except Exception:  # any failure to decode: protobuf's, or a field the schema rejects
            listed.undecodable.append(object_key_of(rt, kv.key))
            continue
        if selector is None or matches_labels(meta_of(obj).labels, selector):
            listed.items.append(obj)
    return listed


class UndecodableObject(CLIError):
    """The one object asked for is stored but does not decode."""

    def __init__(self, rt: ResourceType[Any], key: str) -> None:
        super().__init__(f"{rt.singular} {key}: {UNDECODABLE}")
        self.rt, self.key = rt, key


async def try_get_object(store: Store, rt: ResourceType[M], namespace: str, name: str) -> M | None:
    """The object, None when there is none, UndecodableObject when its value does not decode."""
    try:
        return await store.try_get(rt, namespace, name)
    except Exception as e:
        if not is_undecodable(e):
            raise
        raise UndecodableObject(rt, keys.object_key(namespace if rt.namespaced else "", name)) from e
