"""Typed object store on etcd.

One key per object, `/flotilla/<resource>/<namespace>/<name>`, holding the
serialized message. `metadata.resourceVersion` is the key's mod_revision, and
every write is a transaction comparing it, so a lost update is impossible.
Deletion honours finalizers the way the Kubernetes API server does.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import aetcd
import aetcd.exceptions
import aetcd.transactions
from google.protobuf.message import Message

from flotilla.api import codec, keys, registry
from flotilla.api.v1 import meta_pb2
from flotilla.runtime.clock import Clock, RealClock
from flotilla.store.connect import make_client
from flotilla.store.errors import AlreadyExists, Conflict, NotFound, Unavailable

M = TypeVar("M", bound=Message)
ResourceRef = registry.ResourceType | type[Message]


def resource_type_of(ref: ResourceRef) -> registry.ResourceType:
    if isinstance(ref, registry.ResourceType):
        return ref
    return registry.for_message(ref)


def resource_type_for_object(obj: Message) -> registry.ResourceType:
    return registry.for_object(obj)


@dataclass(frozen=True)
class ListResult:
    items: list[Any]
    revision: int


def _spec_and_status(obj: Message) -> tuple[bytes, bytes]:
    """The parts of an object that user updates and status updates own."""
    if isinstance(obj, meta_pb2.Unstructured):
        content = json.loads(obj.content or b"{}")
        status = content.pop("status", None)
        return (
            json.dumps(content, sort_keys=True).encode(),
            json.dumps(status, sort_keys=True).encode(),
        )
    spec = obj.spec.SerializeToString(deterministic=True) if _has(obj, "spec") else b""
    status = obj.status.SerializeToString(deterministic=True) if _has(obj, "status") else b""
    return spec, status


def _has(obj: Message, field: str) -> bool:
    return field in obj.DESCRIPTOR.fields_by_name


def _copy_status(dst: Message, src: Message) -> None:
    if isinstance(dst, meta_pb2.Unstructured):
        content = json.loads(dst.content or b"{}")
        status = json.loads(src.content or b"{}").get("status")
        content.pop("status", None)
        if status is not None:
            content["status"] = status
        dst.content = codec.raw_json(content)
    elif _has(dst, "status"):
        dst.ClearField("status")
        if src.HasField("status"):
            dst.status.CopyFrom(src.status)


def _payload(obj: Message) -> bytes:
    # resourceVersion lives in etcd's mod_revision, never in the stored bytes.
    rv = obj.metadata.resource_version
    obj.metadata.resource_version = ""
    try:
        return obj.SerializeToString(deterministic=True)
    finally:
        obj.metadata.resource_version = rv


class Store:
    """get / list / create / update / update_status / delete / mutate on etcd."""

    def __init__(
        self,
        client: aetcd.Client,
        clock: Clock | None = None,
        endpoints: str = "",
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.endpoints = endpoints

    @classmethod
    async def connect(cls, endpoints: str, clock: Clock | None = None) -> Store:
        client = make_client(endpoints)
        store = cls(client, clock, endpoints)
        await store._call(client.connect())
        return store

    async def close(self) -> None:
        await self.client.close()

    async def _call(self, awaitable: Awaitable[Any]) -> Any:
        try:
            return await awaitable
        except (aetcd.exceptions.ConnectionFailedError, aetcd.exceptions.ConnectionTimeoutError) as e:
            raise Unavailable(f"etcd at {self.endpoints or 'its endpoint'} is unreachable: {e}") from e

    # -- decoding ---------------------------------------------------------

    @staticmethod
    def decode(rt: registry.ResourceType, value: bytes, mod_revision: int) -> Any:
        obj = rt.message()
        obj.ParseFromString(value)
        obj.metadata.resource_version = str(mod_revision)
        return obj

    # -- reads ------------------------------------------------------------

    async def get(self, ref: ResourceRef, namespace: str, name: str) -> Any:
        rt = resource_type_of(ref)
        key = keys.etcd_key(rt.resource, namespace if rt.namespaced else "", name)
        got = await self._call(self.client.get(key.encode()))
        if got is None:
            raise NotFound(f"{rt.kind} {keys.object_key(namespace if rt.namespaced else '', name)} not found")
        return self.decode(rt, got.value, got.mod_revision)

    async def try_get(self, ref: ResourceRef, namespace: str, name: str) -> Any | None:
        try:
            return await self.get(ref, namespace, name)
        except NotFound:
            return None

    async def list(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        label_selector: dict[str, str] | None = None,
    ) -> ListResult:
        """Objects of one resource (in one namespace, if given) and the revision of the read.

        An informer watches from `revision + 1` to miss nothing.
        """
        rt = resource_type_of(ref)
        prefix = keys.etcd_prefix(rt.resource, namespace if rt.namespaced else None).encode()
        result = await self._call(self.client.get_prefix(prefix))
        items = [self.decode(rt, kv.value, kv.mod_revision) for kv in result]
        if label_selector:
            items = [o for o in items if matches_labels(o.metadata.labels, label_selector)]
        return ListResult(items, result.header.revision)

    # -- writes -----------------------------------------------------------

    async def create(self, obj: M, lease: int | None = None) -> M:
        rt = resource_type_for_object(obj)
        meta = obj.metadata
        if not meta.name:
            raise ValueError("metadata.name: required")
        if rt.namespaced and not meta.namespace:
            raise ValueError("metadata.namespace: required")
        if not rt.namespaced:
            meta.namespace = ""
        key = keys.etcd_key(rt.resource, meta.namespace, meta.name).encode()
        new = type(obj)()
        new.CopyFrom(obj)
        new.metadata.uid = new.metadata.uid or str(uuid.uuid4())
        new.metadata.generation = 1
        new.metadata.creation_timestamp.FromDatetime(self.clock.now().replace(tzinfo=None, microsecond=0))
        new.metadata.ClearField("deletion_timestamp")
        tx = self.client.transactions
        ok, responses = await self._call(
            self.client.transaction(
                compare=[tx.create(key) == 0],
                success=[tx.put(key, _payload(new), lease=_lease(lease))],
                failure=[],
            )
        )
        if not ok:
            raise AlreadyExists(f"{rt.kind} {keys.object_key(meta.namespace, meta.name)} already exists")
        new.metadata.resource_version = str(responses[0].response_put.header.revision)
        return new

    async def update(self, obj: M, lease: int | None = None, original: M | None = None) -> M:
        """Replace spec and metadata, keeping status; CAS on resourceVersion.

        An update that changes nothing writes nothing (and keeps resourceVersion).
        Removing the last finalizer of an object being deleted deletes it.
        `original`: the object as read at obj's resourceVersion (an informer's copy, say);
        given, it stands in for a fresh read, since the CAS proves it is what is stored.
        """
        return await self._update(obj, status_only=False, lease=lease, original=original)

    async def update_status(self, obj: M, original: M | None = None) -> M:
        """Replace only status; CAS on resourceVersion (see `update` for `original`)."""
        return await self._update(obj, status_only=True, original=original)

    async def _update(self, obj: M, status_only: bool, lease: int | None = None, original: M | None = None) -> M:
        rt = resource_type_for_object(obj)
        meta = obj.metadata
        if not meta.resource_version:
            raise ValueError("metadata.resourceVersion: required for an update")
        # The original must be a separate copy: one edited in place would hide the change.
        if original is not None and original is not obj and original.metadata.resource_version == meta.resource_version:
            current = original
        else:
            current = await self.get(rt, meta.namespace, meta.name)
        if current.metadata.resource_version != meta.resource_version:
            raise Conflict(_conflict_message(rt, meta))
        new = type(obj)()
        if status_only:
            new.CopyFrom(current)
            _copy_status(new, obj)
        else:
            new.CopyFrom(obj)
            _copy_status(new, current)
            # Identity and lifecycle fields belong to the server.
            new.metadata.uid = current.metadata.uid
            new.metadata.creation_timestamp.CopyFrom(current.metadata.creation_timestamp)
            new.metadata.ClearField("deletion_timestamp")
            if current.metadata.HasField("deletion_timestamp"):
                new.metadata.deletion_timestamp.CopyFrom(current.metadata.deletion_timestamp)
            new.metadata.generation = current.metadata.generation
            if _spec_and_status(new)[0] != _spec_and_status(current)[0]:
                new.metadata.generation += 1
        if _payload(new) == _payload(current):
            return current
        key = keys.etcd_key(rt.resource, meta.namespace, meta.name).encode()
        tx = self.client.transactions
        rev = int(meta.resource_version)
        if new.metadata.HasField("deletion_timestamp") and not new.metadata.finalizers:
            ops = [tx.delete(key)]
        else:
            ops = [tx.put(key, _payload(new), lease=_lease(lease))]
        ok, responses = await self._call(
            self.client.transaction(compare=[tx.mod(key) == rev], success=ops, failure=[])
        )
        if not ok:
            raise Conflict(_conflict_message(rt, meta))
        if isinstance(ops[0], aetcd.transactions.Put):
            new.metadata.resource_version = str(responses[0].response_put.header.revision)
        return new

    async def delete(
        self,
        ref: ResourceRef,
        namespace: str,
        name: str,
        resource_version: str | None = None,
    ) -> Any | None:
        """Delete an object: with finalizers, only mark it (deletionTimestamp).

        Returns the object as it now stands (marked), or None once it is gone.
        """
        rt = resource_type_of(ref)
        key = keys.etcd_key(rt.resource, namespace if rt.namespaced else "", name).encode()
        tx = self.client.transactions
        while True:
            current = await self.get(rt, namespace, name)
            if resource_version and current.metadata.resource_version != resource_version:
                raise Conflict(_conflict_message(rt, current.metadata))
            rev = int(current.metadata.resource_version)
            if current.metadata.finalizers:
                if current.metadata.HasField("deletion_timestamp"):
                    return current
                current.metadata.deletion_timestamp.FromDatetime(
                    self.clock.now().replace(tzinfo=None, microsecond=0)
                )
                op = tx.put(key, _payload(current))
            else:
                op = tx.delete(key)
            ok, responses = await self._call(
                self.client.transaction(compare=[tx.mod(key) == rev], success=[op], failure=[])
            )
            if ok:
                if current.metadata.finalizers:
                    current.metadata.resource_version = str(responses[0].response_put.header.revision)
                    return current
                return None
            if resource_version:
                raise Conflict(_conflict_message(rt, current.metadata))

    async def mutate(
        self,
        ref: ResourceRef,
        namespace: str,
        name: str,
        change: Callable[[Any], bool | None],
        status: bool = False,
        attempts: int = 50,
    ) -> Any:
        """Read-modify-write that retries on conflict, from a fresh read each time.

        `change` edits the object in place; returning False means "nothing to do"
        and skips the write.
        """
        rt = resource_type_of(ref)
        for attempt in range(attempts):
            obj = await self.get(rt, namespace, name)
            original = type(obj)()
            original.CopyFrom(obj)
            if change(obj) is False:
                return obj
            try:
                if status:
                    return await self.update_status(obj, original=original)
                return await self.update(obj, original=original)
            except Conflict:
                # Jitter keeps many contending writers from retrying in lockstep.
                await asyncio.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise Conflict(f"{rt.kind} {keys.object_key(namespace, name)}: still conflicting after {attempts} tries")

    async def grant_lease(self, ttl: int) -> int:
        lease = await self._call(self.client.lease(ttl))
        return lease.id


def _lease(lease: int | None) -> Any:
    return lease if lease else None


def _conflict_message(rt: registry.ResourceType, meta: Any) -> str:
    return (
        f"{rt.kind} {keys.object_key(meta.namespace, meta.name)}: the object has been modified "
        f"(resourceVersion {meta.resource_version} is stale); read it again and retry"
    )


def matches_labels(labels: Any, selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def object_key_of(obj: Message) -> str:
    return keys.object_key(obj.metadata.namespace, obj.metadata.name)


def iter_keys(objs: Iterable[Message]) -> list[str]:
    return [object_key_of(o) for o in objs]
