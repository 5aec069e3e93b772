"""The binding-kind table: one row per kind, and queue keys that round-trip."""

from __future__ import annotations

import pytest

from flotilla.api import bindings, registry, wellknown
from flotilla.api.v1 import work_pb2


@pytest.mark.parametrize(("binding", "key", "rt", "namespace", "name"), [
    (work_pb2.ResourceBinding(metadata={"namespace": "default", "name": "nginx-deployment"}),
     "ResourceBinding:default/nginx-deployment", registry.RESOURCE_BINDING, "default", "nginx-deployment"),
    (work_pb2.ClusterResourceBinding(metadata={"name": "ns-namespace"}),
     "ClusterResourceBinding:ns-namespace", registry.CLUSTER_RESOURCE_BINDING, "", "ns-namespace"),
])
def test_keys_round_trip(binding: bindings.Binding, key: str, rt: registry.ResourceType[bindings.Binding],
                         namespace: str, name: str) -> None:
    assert bindings.key_of(binding) == key
    assert bindings.parse_binding_key(key) == (rt, namespace, name)


def test_each_kind_has_its_own_karmada_names() -> None:
    rb, crb = bindings.RESOURCE_BINDING, bindings.CLUSTER_RESOURCE_BINDING
    assert (rb.finalizer, crb.finalizer) == (wellknown.BINDING_FINALIZER, wellknown.CLUSTER_BINDING_FINALIZER)
    assert rb.permanent_id_label == "resourcebinding.karmada.io/permanent-id"
    assert crb.permanent_id_label == "clusterresourcebinding.karmada.io/permanent-id"
    assert (rb.namespace_annotation, crb.namespace_annotation) == ("resourcebinding.karmada.io/namespace", None)
    assert bindings.kind_of(work_pb2.ClusterResourceBinding()) is crb


def test_an_unknown_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match='unknown binding kind "Work"'):
        bindings.parse_binding_key("Work:default/x")
