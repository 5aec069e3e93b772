"""Reading objects for display without letting one bad stored value hide the rest.

A value in etcd that does not decode (written by an incompatible version, or
damaged) is named in one line, and every other object is still shown: the store
skips such values in a list and names them in `ListResult.undecodable`, and
raises `Undecodable` from `get`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from google.protobuf.message import Message

from flotilla.api import keys
from flotilla.api.errors import UserError
from flotilla.api.registry import ResourceType
from flotilla.store import Undecodable
from flotilla.store.base import StoreBase

UNDECODABLE = "stored value cannot be decoded"

M = TypeVar("M", bound=Message)


@dataclass
class Listed(Generic[M]):
    items: list[M]
    # Object keys (`namespace/name` or `name`) of values that did not decode.
    undecodable: list[str] = field(default_factory=list)


def undecodable_line(rt: ResourceType[Any], key: str) -> str:
    return f"error: {rt.singular} {key}: {UNDECODABLE}"


def object_key_of(rt: ResourceType[Any], key: str) -> str:
    """`ns/name` or `name` from an etcd key (`/flotilla/<resource>/ns/name`)."""
    prefix = keys.etcd_prefix(rt.resource)
    return key[len(prefix):] if key.startswith(prefix) else key


async def list_objects(store: StoreBase, rt: ResourceType[M], namespace: str | None = None,
                       selector: dict[str, str] | None = None) -> Listed[M]:
    result = await store.list(rt, namespace, selector)
    return Listed(list(result.items), [object_key_of(rt, k) for k in result.undecodable])


class UndecodableObject(UserError):
    """The one object asked for is stored but does not decode."""

    def __init__(self, rt: ResourceType[Any], key: str) -> None:
        super().__init__(f"{rt.singular} {key}: {UNDECODABLE}")
        self.rt, self.key = rt, key


async def try_get_object(store: StoreBase, rt: ResourceType[M], namespace: str, name: str) -> M | None:
    """The object, None when there is none, UndecodableObject when its value does not decode."""
    try:
        return await store.try_get(rt, namespace, name)
    except Undecodable as e:
        raise UndecodableObject(rt, keys.object_key(namespace if rt.namespaced else "", name)) from e
