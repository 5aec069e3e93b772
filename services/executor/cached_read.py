"""Reads from an informer once it has synced, from etcd before.

A reconciler is brought to a key by its informer's event, so the informer holds that version
already, and a later one brings the key back. Read from etcd instead, every pass would cost a
round trip per object it looks at, and at ten thousand bindings the passes would queue behind
them.
A decision made on a copy that has since changed fails its compare-and-swap, and the caller
decides again.
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import Message

from flotilla.api import keys
from flotilla.api.registry import ResourceType
from flotilla.store import ObjectStore
from flotilla.store.informer import Informer

M = TypeVar("M", bound=Message)


async def read(store: ObjectStore, informer: Informer[M] | None, rt: ResourceType[M], namespace: str,
               name: str, fresh: bool = False) -> M | None:
    """The object from `informer` when it is synced (and `fresh` is not asked), else from etcd."""
    if not fresh and informer is not None and informer.synced:
        return informer.get(keys.object_key(namespace, name))
    return await store.try_get(rt, namespace, name)
