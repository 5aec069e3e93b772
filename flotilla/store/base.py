"""What every object store means by get, list, create, update and delete.

The semantics (compare-and-swap on resourceVersion, finalizers, generation,
the status subresource, updates that change nothing writing nothing) live
here once, over a handful of key-value primitives, so the etcd store and the
in-memory store cannot drift apart. A store supplies the primitives.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import random
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeAlias, TypeVar

from google.protobuf.message import Message

from flotilla.aio.clock import Clock
from flotilla.api import codec, jsonbytes, keys, registry
from flotilla.api.v1 import meta_pb2
from flotilla.store.errors import AlreadyExists, Conflict, NotFound, Undecodable

M = TypeVar("M", bound=Message)
ResourceRef: TypeAlias = registry.ResourceType[M] | type[M]


def resource_type_of(ref: ResourceRef[M]) -> registry.ResourceType[M]:
    if isinstance(ref, registry.ResourceType):
        return ref
    return registry.for_message(ref)


def resource_type_for_object(obj: M) -> registry.ResourceType[M]:
    return registry.for_object(obj)


@dataclass(frozen=True)
class ListResult(Generic[M]):
    items: list[M]
    revision: int
    # etcd keys whose values did not decode: left out of items, but named so
    # that a reader (`flotillactl get`) can say so instead of hiding them.
    undecodable: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: bytes
    mod_revision: int


class WatchKind(StrEnum):
    PUT = "PUT"
    DELETE = "DELETE"


@dataclass(frozen=True)
class KeyEvent:
    """One change under a watched prefix, undecoded: the watcher decides what a bad value means.

    Not `flotilla.api.events.WatchEvent`, the typed event an informer delivers: this is one raw
    etcd change (PUT or DELETE of a key's bytes, at a revision), which only the informer reads
    and turns into typed events."""

    kind: WatchKind
    key: str
    value: bytes
    revision: int


def decode_object(rt: registry.ResourceType[M], value: bytes, mod_revision: int, key: str = "") -> M:
    """The object stored under `key`; Undecodable for bytes that are not one.

    Protobuf accepts some garbage as a message of unknown fields, so an object
    whose name is not its key's is refused too.
    """
    obj = rt.message()
    try:
        obj.ParseFromString(value)
    except Exception as e:  # DecodeError, and whatever else the parser has in it
        raise Undecodable(rt.kind, key or "(unknown key)", f"{type(e).__name__}: {e}") from e
    meta = meta_of(obj)
    if key and key.rsplit("/", 1)[-1] != meta.name:
        raise Undecodable(rt.kind, key, f"it names {meta.name!r}")
    meta.resource_version = str(mod_revision)
    return obj


def _spec_and_status(obj: Message) -> tuple[bytes, bytes]:
    """The parts of an object that user updates and status updates own."""
    if isinstance(obj, meta_pb2.Unstructured):
        content = jsonbytes.loads(obj.content or b"{}")
        status = content.pop("status", None)
        return jsonbytes.dumps_sorted(content), jsonbytes.dumps_sorted(status)
    fields: Any = obj
    spec = fields.spec.SerializeToString(deterministic=True) if _has(obj, "spec") else b""
    status = fields.status.SerializeToString(deterministic=True) if _has(obj, "status") else b""
    return spec, status


def _has(obj: Message, name: str) -> bool:
    return name in obj.DESCRIPTOR.fields_by_name


def _copy_status(dst: Message, src: Message) -> None:
    if isinstance(dst, meta_pb2.Unstructured):
        assert isinstance(src, meta_pb2.Unstructured)
        content = jsonbytes.loads(dst.content or b"{}")
        status = jsonbytes.loads(src.content or b"{}").get("status")
        content.pop("status", None)
        if status is not None:
            content["status"] = status
        dst.content = codec.raw_json(content)
    elif _has(dst, "status"):
        dst.ClearField("status")
        if src.HasField("status"):
            target: Any = dst
            target.status.CopyFrom(getattr(src, "status"))  # noqa: B009 - status is not on Message


def payload(obj: Message) -> bytes:
    # resourceVersion lives in the store's revision, never in the stored bytes.
    meta = meta_of(obj)
    rv = meta.resource_version
    meta.resource_version = ""
    try:
        return obj.SerializeToString(deterministic=True)
    finally:
        meta.resource_version = rv


def meta_of(obj: Message) -> meta_pb2.ObjectMeta:
    meta: meta_pb2.ObjectMeta = getattr(obj, "metadata")  # noqa: B009 - metadata is not on Message
    return meta


def copy_of(obj: M) -> M:
    """A separate copy of a message (an edit to it leaves the original, an informer's, alone)."""
    new = type(obj)()
    new.CopyFrom(obj)
    return new


def _now(clock: Clock) -> datetime:
    return clock.now().replace(tzinfo=None, microsecond=0)


def conflict_message(rt: registry.ResourceType[Any], meta: meta_pb2.ObjectMeta) -> str:
    return (
        f"{rt.kind} {keys.object_key(meta.namespace, meta.name)}: the object has been modified "
        f"(resourceVersion {meta.resource_version} is stale); read it again and retry"
    )


def matches_labels(labels: Mapping[str, str], selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def object_key_of(obj: Message) -> str:
    meta = meta_of(obj)
    return keys.object_key(meta.namespace, meta.name)


def _etcd_key(rt: registry.ResourceType[Any], namespace: str, name: str) -> str:
    return keys.etcd_key(rt.resource, namespace if rt.namespaced else "", name)


def _decoded_or_none(rt: registry.ResourceType[M], kv: KeyValue | None) -> M | None:
    if kv is None:
        return None
    try:
        return decode_object(rt, kv.value, kv.mod_revision, kv.key)
    except Undecodable:
        return None


class StoreBase(abc.ABC):
    """get / list / create / update / update_status / delete / mutate over key-value primitives."""

    clock: Clock
    # Where the store is, for messages ("" in memory).
    endpoints: str = ""

    # -- the primitives a store supplies -----------------------------------
    # Public: leader election, the endpoint registry and the plane's storage API
    # (services/webhook/storage.py) use them directly.

    @abc.abstractmethod
    async def kv_get(self, key: str) -> KeyValue | None: ...

    @abc.abstractmethod
    async def kv_range(self, prefix: str) -> tuple[builtins.list[KeyValue], int]:
        """Every key under prefix, and the store's revision at that read."""

    @abc.abstractmethod
    async def kv_create(self, key: str, value: bytes, lease: int | None) -> int | KeyValue | None:
        """Put if the key does not exist; the write's revision, or else what is there (None when
        the store cannot tell in the same round trip)."""

    @abc.abstractmethod
    async def kv_put_if(self, key: str, value: bytes, mod_revision: int, lease: int | None) -> int | None:
        """Put if the key's mod revision is still this one; the write's revision, or None."""

    @abc.abstractmethod
    async def kv_delete_if(self, key: str, mod_revision: int) -> bool:
        """Delete if the key's mod revision is still this one."""

    @abc.abstractmethod
    async def grant_lease(self, ttl: int) -> int: ...

    @abc.abstractmethod
    async def refresh_lease(self, lease: int) -> int:
        """Keep a lease alive for another TTL; the TTL it now has, 0 when it is gone."""

    @abc.abstractmethod
    async def revoke_lease(self, lease: int) -> None:
        """End a lease now; the keys written on it go with it."""

    @abc.abstractmethod
    def watch(self, prefix: str, start_revision: int) -> AsyncGenerator[KeyEvent, None]:
        """Changes under prefix from start_revision on, in revision order, until closed.

        Raises Compacted if start_revision is no longer kept, Unavailable when the
        stream breaks; either way the watcher starts a new watch.
        """

    @abc.abstractmethod
    async def close(self) -> None: ...

    # -- decoding ----------------------------------------------------------

    @staticmethod
    def decode(rt: registry.ResourceType[M], value: bytes, mod_revision: int, key: str = "") -> M:
        return decode_object(rt, value, mod_revision, key)

    # -- reads -------------------------------------------------------------

    async def get(self, ref: ResourceRef[M], namespace: str, name: str) -> M:
        """The object; NotFound if there is none, Undecodable if its stored value is corrupt."""
        rt = resource_type_of(ref)
        key = _etcd_key(rt, namespace, name)
        got = await self.kv_get(key)
        if got is None:
            raise NotFound(f"{rt.kind} {keys.object_key(namespace if rt.namespaced else '', name)} not found")
        return decode_object(rt, got.value, got.mod_revision, key)

    async def try_get(self, ref: ResourceRef[M], namespace: str, name: str) -> M | None:
        try:
            return await self.get(ref, namespace, name)
        except NotFound:
            return None

    async def list(
        self,
        ref: ResourceRef[M],
        namespace: str | None = None,
        label_selector: dict[str, str] | None = None,
    ) -> ListResult[M]:
        """Objects of one resource (in one namespace, if given) and the revision of the read.

        An informer watches from `revision + 1` to miss nothing. Corrupt values
        are skipped, not raised: one bad key must not hide every good object.
        """
        rt = resource_type_of(ref)
        prefix = keys.etcd_prefix(rt.resource, namespace if rt.namespaced else None)
        kvs, revision = await self.kv_range(prefix)
        items: builtins.list[M] = []
        undecodable: builtins.list[str] = []
        for kv in kvs:
            try:
                items.append(decode_object(rt, kv.value, kv.mod_revision, kv.key))
            except Undecodable:
                undecodable.append(kv.key)
        if label_selector:
            items = [o for o in items if matches_labels(meta_of(o).labels, label_selector)]
        return ListResult(items, revision, undecodable)

    # -- writes ------------------------------------------------------------

    async def create(self, obj: M, lease: int | None = None) -> M:
        rt = resource_type_for_object(obj)
        meta = meta_of(obj)
        if not meta.name:
            raise ValueError("metadata.name: required")
        if rt.namespaced and not meta.namespace:
            raise ValueError("metadata.namespace: required")
        if not rt.namespaced:
            meta.namespace = ""
        key = keys.etcd_key(rt.resource, meta.namespace, meta.name)
        new = copy_of(obj)
        new_meta = meta_of(new)
        new_meta.uid = new_meta.uid or str(uuid.uuid4())
        new_meta.generation = 1
        new_meta.creation_timestamp.FromDatetime(_now(self.clock))
        new_meta.ClearField("deletion_timestamp")
        revision = await self.kv_create(key, payload(new), lease or None)
        if not isinstance(revision, int):
            raise AlreadyExists(f"{rt.kind} {keys.object_key(meta.namespace, meta.name)} already exists",
                                current=_decoded_or_none(rt, revision))
        new_meta.resource_version = str(revision)
        return new

    async def update(self, obj: M, lease: int | None = None, original: M | None = None,
                     status_change: Callable[[M], object] | None = None) -> M:
        """Replace spec and metadata, keeping status; CAS on resourceVersion.

        An update that changes nothing writes nothing (and keeps resourceVersion).
        Removing the last finalizer of an object being deleted deletes it.
        `original`: the object as read at obj's resourceVersion (an informer's copy, say);
        given, it stands in for a fresh read, since the CAS proves it is what is stored.
        `status_change`: edits the status of the object about to be written, which already has
        its new generation, so a writer can record the generation it wrote in the same write
        (one write where a spec update and a status update would be two).
        """
        return await self._update(obj, status_only=False, lease=lease, original=original, status_change=status_change)

    async def update_status(self, obj: M, original: M | None = None) -> M:
        """Replace only status; CAS on resourceVersion (see `update` for `original`)."""
        return await self._update(obj, status_only=True, original=original)

    async def _update(self, obj: M, status_only: bool, lease: int | None = None, original: M | None = None,
                      status_change: Callable[[M], object] | None = None) -> M:
        rt = resource_type_for_object(obj)
        meta = meta_of(obj)
        if not meta.resource_version:
            raise ValueError("metadata.resourceVersion: required for an update")
        # The original must be a separate copy: one edited in place would hide the change.
        if (
            original is not None
            and original is not obj
            and meta_of(original).resource_version == meta.resource_version
        ):
            current = original
        else:
            current = await self.get(rt, meta.namespace, meta.name)
        cur_meta = meta_of(current)
        if cur_meta.resource_version != meta.resource_version:
            raise Conflict(conflict_message(rt, meta))
        if status_only:
            new = copy_of(current)
            _copy_status(new, obj)
        else:
            new = copy_of(obj)
            _copy_status(new, current)
            # Identity and lifecycle fields belong to the server.
            new_meta = meta_of(new)
            new_meta.uid = cur_meta.uid
            new_meta.creation_timestamp.CopyFrom(cur_meta.creation_timestamp)
            new_meta.ClearField("deletion_timestamp")
            if cur_meta.HasField("deletion_timestamp"):
                new_meta.deletion_timestamp.CopyFrom(cur_meta.deletion_timestamp)
            new_meta.generation = cur_meta.generation
            if _spec_and_status(new)[0] != _spec_and_status(current)[0]:
                new_meta.generation += 1
            if status_change is not None:
                status_change(new)
        if payload(new) == payload(current):
            return current
        new_meta = meta_of(new)
        key = keys.etcd_key(rt.resource, meta.namespace, meta.name)
        rev = int(meta.resource_version)
        if new_meta.HasField("deletion_timestamp") and not new_meta.finalizers:
            if not await self.kv_delete_if(key, rev):
                raise Conflict(conflict_message(rt, meta))
            return new
        revision = await self.kv_put_if(key, payload(new), rev, lease or None)
        if revision is None:
            raise Conflict(conflict_message(rt, meta))
        new_meta.resource_version = str(revision)
        return new

    async def delete(
        self,
        ref: ResourceRef[M],
        namespace: str,
        name: str,
        resource_version: str | None = None,
        change: Callable[[M], object] | None = None,
    ) -> M | None:
        """Delete an object: with finalizers, only mark it (deletionTimestamp).

        Returns the object as it now stands (marked), or None once it is gone.
        A corrupt value is deleted outright (there are no finalizers to read),
        unless a resourceVersion was asked for, which no corrupt value can match.
        `change`: edits the object in the write that marks it (an annotation its finalizer's
        owner reads when it sees the deletion), or on its own if it was marked already; an
        object without finalizers is simply gone.
        """
        rt = resource_type_of(ref)
        key = _etcd_key(rt, namespace, name)
        while True:
            try:
                current = await self.get(rt, namespace, name)
            except Undecodable:
                if resource_version:
                    raise
                raw = await self.kv_get(key)
                if raw is None or await self.kv_delete_if(key, raw.mod_revision):
                    return None
                continue
            meta = meta_of(current)
            if resource_version and meta.resource_version != resource_version:
                raise Conflict(conflict_message(rt, meta))
            rev = int(meta.resource_version)
            if meta.finalizers:
                marked = meta.HasField("deletion_timestamp")
                edited = False
                if change is not None:
                    before = payload(current)
                    change(current)
                    edited = payload(current) != before
                if marked and not edited:
                    return current
                if not marked:
                    meta.deletion_timestamp.FromDatetime(_now(self.clock))
                revision = await self.kv_put_if(key, payload(current), rev, None)
                if revision is not None:
                    meta.resource_version = str(revision)
                    return current
            elif await self.kv_delete_if(key, rev):
                return None
            if resource_version:
                raise Conflict(conflict_message(rt, meta))

    async def mutate(
        self,
        ref: ResourceRef[M],
        namespace: str,
        name: str,
        change: Callable[[M], bool | None],
        status: bool = False,
        attempts: int = 50,
        status_change: Callable[[M], object] | None = None,
    ) -> M:
        """Read-modify-write that retries on conflict, from a fresh read each time.

        `change` edits the object in place; returning False means "nothing to do"
        and skips the write. `status_change`: as for `update` (spec updates only).
        """
        rt = resource_type_of(ref)
        for attempt in range(attempts):
            obj = await self.get(rt, namespace, name)
            original = copy_of(obj)
            if change(obj) is False:
                return obj
            try:
                if status:
                    return await self.update_status(obj, original=original)
                return await self.update(obj, original=original, status_change=status_change)
            except Conflict:
                # Jitter keeps many contending writers from retrying in lockstep.
                await asyncio.sleep(random.uniform(0, 0.002 * min(attempt + 1, 10)))
        raise Conflict(f"{rt.kind} {keys.object_key(namespace, name)}: still conflicting after {attempts} tries")
