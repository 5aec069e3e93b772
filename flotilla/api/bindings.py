"""ResourceBinding and ClusterResourceBinding as one table.

Every controller that handles bindings handles both kinds through one code path, keyed
by the rows below, so the two never drift into near-copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from flotilla.api import keys, registry, wellknown
from flotilla.api.v1 import work_pb2

Binding = work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding


@dataclass(frozen=True)
class BindingKind:
    resource_type: registry.ResourceType[Binding]
    finalizer: str
    permanent_id_label: str
    name_annotation: str
    # Only the namespaced kind has one: a ClusterResourceBinding has no namespace to record.
    namespace_annotation: str | None

    @property
    def kind(self) -> str:
        return self.resource_type.kind


RESOURCE_BINDING = BindingKind(
    registry.RESOURCE_BINDING, wellknown.BINDING_FINALIZER, wellknown.RB_PERMANENT_ID_LABEL,
    wellknown.RB_NAME_ANNOTATION, wellknown.RB_NAMESPACE_ANNOTATION,
)
CLUSTER_RESOURCE_BINDING = BindingKind(
    registry.CLUSTER_RESOURCE_BINDING, wellknown.CLUSTER_BINDING_FINALIZER, wellknown.CRB_PERMANENT_ID_LABEL,
    wellknown.CRB_NAME_ANNOTATION, None,
)
BINDING_KINDS: tuple[BindingKind, ...] = (RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING)
_BY_KIND = {k.kind: k for k in BINDING_KINDS}


def kind_named(kind: str) -> BindingKind:
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise ValueError(f'unknown binding kind "{kind}"') from None


def kind_of(binding: Binding) -> BindingKind:
    return RESOURCE_BINDING if isinstance(binding, work_pb2.ResourceBinding) else CLUSTER_RESOURCE_BINDING


def binding_key(kind: str, object_key: str) -> str:
    """A work-queue key naming one binding of either kind: `ResourceBinding:ns/name`."""
    return f"{kind}:{object_key}"


def key_of(binding: Binding) -> str:
    return binding_key(kind_of(binding).kind, keys.object_key(binding.metadata.namespace, binding.metadata.name))


def parse_binding_key(key: str) -> tuple[registry.ResourceType[Binding], str, str]:
    """The binding's resource type, namespace and name, from `binding_key`'s form."""
    kind, _, object_key = key.partition(":")
    namespace, name = keys.split_key(object_key)
    return kind_named(kind).resource_type, namespace, name


class BindingCache(Protocol):
    """What these helpers read of an informer of one binding kind."""

    def get(self, key: str) -> Binding | None: ...

    def by_index(self, name: str, value: str) -> list[Binding]: ...

    def index_keys(self, name: str, value: str) -> frozenset[str]: ...


def cached(caches: Mapping[str, BindingCache], key: str) -> Binding | None:
    """The binding a queue key names, from the cache of its kind; None when gone or being deleted."""
    rt, namespace, name = parse_binding_key(key)
    binding = caches[rt.kind].get(keys.object_key(namespace, name))
    if binding is None or binding.metadata.HasField("deletion_timestamp"):
        return None
    return binding


def keys_by_index(caches: Mapping[str, BindingCache], index: str, value: str) -> list[str]:
    """The queue keys of every binding, of either kind, under `value` in the caches' `index`."""
    return [binding_key(kind, key) for kind, cache in caches.items() for key in sorted(cache.index_keys(index, value))]
