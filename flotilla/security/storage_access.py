"""What a key of the store holds, in RBAC's terms: the API group, resource, namespace and name a
request to the plane's storage API (services/webhook/storage.py) is authorized on.

The keys are those of flotilla.api.keys: `/flotilla/<resource>/[<namespace>/]<name>`, where
`<resource>` is a built-in's plural, or `<plural>.<group>` (`<plural>` in the core group) for a
template. A key ending in "/" is a collection (a list or a watch of a resource, or of one
namespace of it); any other key is one object. Flotilla's own registries are resources of the
`flotilla.io` group: `endpoints` and `elections` (named for the service), and `leases` of the
store. Who holds which lease (`/flotilla/leaseowners/`) is never served.

What may be written through the API at all is `write_refusal`'s: status and bookkeeping, never
an object's content, which only admission writes.

Pure: a key in, a target out (tests/unit/test_storage_access.py is the table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from flotilla.api import jsonbytes, registry
from flotilla.api.v1 import meta_pb2
from flotilla.security import rbac

ROOT = "/flotilla/"
SYSTEM_GROUP = "flotilla.io"
ENDPOINTS, ELECTIONS, STORE_LEASES, SHARDS = "endpoints", "elections", "leases", "shards"


def _known_template(segment: str) -> registry.ResourceType[Any] | None:
    try:
        found = registry.lookup(segment)
    except registry.UnknownResourceError:
        return None
    return found if found.resource == segment else None


class NotServed(ValueError):
    """A key the storage API does not serve; the message says why."""


@dataclass(frozen=True)
class Target:
    api_group: str
    resource: str
    namespace: str = ""
    name: str = ""
    # A prefix (list, watch), not one key.
    collection: bool = False
    # The registered type of the objects under it; None for a template's (Unstructured) and for
    # the registries, whose values are not objects.
    builtin: registry.ResourceType[Any] | None = None

    @property
    def is_object(self) -> bool:
        return self.api_group != SYSTEM_GROUP and self.resource != rbac.ALL

    def request(self, verb: str, subresource: str = "") -> rbac.Request:
        return rbac.Request(verb, self.api_group, self.resource, self.namespace, self.name, subresource)


EVERYTHING = Target(rbac.ALL, rbac.ALL, collection=True)
LEASE_GRANT = rbac.Request("create", SYSTEM_GROUP, STORE_LEASES)


def target_of(key: str) -> Target:
    if not key.startswith(ROOT):
        raise NotServed(f'"{key}" is not a key of the plane (they start with {ROOT})')
    collection = key.endswith("/")
    parts = key[len(ROOT):].split("/")
    if collection:
        parts.pop()
    if not parts:
        return EVERYTHING
    if any(not part for part in parts):
        raise NotServed(f'"{key}": empty path segment')
    segment, rest = parts[0], parts[1:]
    if segment == registry.LEASE_OWNERS_SEGMENT:
        raise NotServed(f'"{key}": lease holders are not served')
    if segment == registry.SHARDS_SEGMENT:
        return _shards_target(key, rest, collection)
    if segment in (registry.ENDPOINTS_SEGMENT, registry.ELECTION_SEGMENT):
        return _registry_target(key, segment, rest, collection)
    return _object_target(key, segment, rest, collection)


def _registry_target(key: str, segment: str, rest: list[str], collection: bool) -> Target:
    """`/flotilla/endpoints/<service>/<instance>` and `/flotilla/election/<service>`: named for
    the service, so that a role can hold one service's and nobody else's."""
    resource = ENDPOINTS if segment == registry.ENDPOINTS_SEGMENT else ELECTIONS
    most = 2 if resource == ENDPOINTS else 1
    if len(rest) > most:
        raise NotServed(f'"{key}": expected {ROOT}{segment}/<service>{"/<instance>" if most == 2 else ""}')
    return Target(SYSTEM_GROUP, resource, name=rest[0] if rest else "", collection=collection and len(rest) < most)


def _shards_target(key: str, rest: list[str], collection: bool) -> Target:
    """`/flotilla/shards/<service>/{members,claims}/<name>` (flotilla.store.shards): named for the
    service, as its endpoints are; `flotillactl status` reads who holds which share."""
    if len(rest) > 3 or (len(rest) >= 2 and rest[1] not in ("members", "claims")):
        raise NotServed(f'"{key}": expected {ROOT}{registry.SHARDS_SEGMENT}/<service>/(members|claims)/<name>')
    return Target(SYSTEM_GROUP, SHARDS, name=rest[0] if rest else "", collection=collection or len(rest) < 3)


def _object_target(key: str, segment: str, rest: list[str], collection: bool) -> Target:
    builtin = registry.BUILTIN_BY_RESOURCE.get(segment)
    if builtin is not None:
        group, plural = builtin.group, builtin.plural
    else:
        plural, _, group = segment.partition(".")
        if not plural or (registry.BUILTIN_BY_RESOURCE.get(plural, None) is not None and \
                registry.BUILTIN_BY_RESOURCE[plural].group == group):
            raise NotServed(f'"{key}": not where objects of a kind are kept')
    # The scope of a kind the registry knows (built-ins, Kubernetes' common kinds); another
    # template's is what its key says.
    known = builtin or _known_template(segment)
    if collection:
        if len(rest) > 1 or (rest and known is not None and not known.namespaced):
            raise NotServed(f'"{key}": expected {ROOT}{segment}/ or {ROOT}{segment}/<namespace>/')
        return Target(group, plural, rest[0] if rest else "", collection=True, builtin=builtin)
    if (known is not None and len(rest) != (2 if known.namespaced else 1)) or not 1 <= len(rest) <= 2:
        raise NotServed(f'"{key}": expected {ROOT}{segment}/[<namespace>/]<name>')
    namespace, name = (rest[0], rest[1]) if len(rest) == 2 else ("", rest[0])
    return Target(group, plural, namespace, name, builtin=builtin)


# -- what may be written here -------------------------------------------------------------------

# Kinds that admission does not check, written by whoever RBAC lets write them.
_FREELY_WRITTEN = (registry.EVENT.resource, registry.LEASE.resource)


def write_refusal(target: Target, verb: str, old: Message | None, new: Message | None) -> str:
    """Why this write may not go through the storage API ("" when it may). The API is for status
    and bookkeeping; an object's content is written through admission (`flotillactl apply`), which
    validates it and stops anyone granting more than they hold. So: the registries, Events and
    Leases freely; of any other object, only updates that change nothing but its status,
    annotations and finalizers (`old` and `new` are the stored and the proposed object)."""
    if not target.is_object or (target.builtin is not None and target.builtin.resource in _FREELY_WRITTEN):
        return ""
    if verb == "update" and old is not None and new is not None and \
            _without(old, _BOOKKEEPING) == _without(new, _BOOKKEEPING):
        return ""
    what = f'{target.resource}{"." + target.api_group if target.api_group else ""} "{target.name}"'
    if verb == "update":
        return (f"{what}: only its status, annotations and finalizers are written through the storage API; "
                "write the rest through admission (flotillactl apply)")
    return f"{what}: {verb} it through admission (flotillactl apply / delete), not the storage API"


# Metadata the storage API may change besides the status: (proto field, JSON field).
_BOOKKEEPING = (("annotations", "annotations"), ("finalizers", "finalizers"))


def status_only(old: Message, new: Message) -> bool:
    """Whether `new` differs from `old` in its status alone (an update of the `status` subresource)."""
    return _without(old, ()) == _without(new, ())


def _without(obj: Message, metadata: tuple[tuple[str, str], ...]) -> bytes:
    """The object without its status, its resourceVersion and the `metadata` fields named."""
    fixed: Any = type(obj)()
    fixed.CopyFrom(obj)
    names = (*metadata, ("resource_version", "resourceVersion"))
    for name, _ in names:
        fixed.metadata.ClearField(name)
    if isinstance(fixed, meta_pb2.Unstructured):
        content = jsonbytes.loads(fixed.content or b"{}")
        content.pop("status", None)
        meta = content.get("metadata")
        if isinstance(meta, dict):
            for _, json_name in names:
                meta.pop(json_name, None)
        fixed.content = jsonbytes.dumps_sorted(content)
    elif "status" in fixed.DESCRIPTOR.fields_by_name:
        fixed.ClearField("status")
    return bytes(fixed.SerializeToString(deterministic=True))
