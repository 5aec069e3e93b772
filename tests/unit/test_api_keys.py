"""Object keys, etcd keys, Karmada's derived names and the kind registry."""

from __future__ import annotations

import pytest

from flotilla.api import keys, registry
from flotilla.api.v1 import cluster_pb2, core_pb2, meta_pb2, policy_pb2, work_pb2

# -- keys ---------------------------------------------------------------------


def test_object_key_and_split() -> None:
    assert keys.object_key("default", "nginx") == "default/nginx"
    assert keys.object_key("", "member1") == "member1"
    assert keys.object_key(None, "member1") == "member1"
    assert keys.split_key("default/nginx") == ("default", "nginx")
    assert keys.split_key("member1") == ("", "member1")
    for bad in ("/x", "x/", "a/b/c"):
        with pytest.raises(ValueError, match="invalid object key"):
            keys.split_key(bad)


def test_etcd_keys() -> None:
    assert keys.etcd_key("resourcebindings", "default", "nginx-deployment") == (
        "/flotilla/resourcebindings/default/nginx-deployment"
    )
    assert keys.etcd_key("clusters", "", "member1") == "/flotilla/clusters/member1"
    assert keys.etcd_key("deployments.apps", "default", "nginx") == "/flotilla/deployments.apps/default/nginx"
    assert keys.etcd_prefix("works") == "/flotilla/works/"
    assert keys.etcd_prefix("works", "karmada-es-member1") == "/flotilla/works/karmada-es-member1/"
    assert keys.etcd_key("works", "ns", "w").startswith(keys.etcd_prefix("works", "ns"))
    assert not keys.etcd_key("workspaces", "", "w").startswith(keys.etcd_prefix("works"))
    with pytest.raises(ValueError):
        keys.etcd_key("clusters", "", "")
    with pytest.raises(ValueError):
        keys.etcd_prefix("a/b")


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("nginx", "Deployment", "nginx-deployment"),
        ("MySQL", "StatefulSet", "mysql-statefulset"),
        ("system:controller:cronjob-controller", "ClusterRole", "system.controller.cronjob-controller-clusterrole"),
    ],
)
def test_binding_name(name: str, kind: str, expected: str) -> None:
    assert keys.binding_name(name, kind) == expected


def test_work_name_matches_karmada() -> None:
    assert keys.work_name("default", "nginx", "Deployment") == "nginx-687f7fb96f"


def test_work_name_parts() -> None:
    assert keys.fnv32a(b"default-nginx-deployment") == 2439396529
    assert keys.safe_encode("2439396529") == "687f7fb96f"
    # Cluster-scoped: no namespace in the hash; ':' made DNS-safe in the prefix only.
    cluster_scoped = keys.work_name("", "system:admin", "ClusterRole")
    assert cluster_scoped == "system.admin-" + keys.safe_encode(str(keys.fnv32a(b"system:admin-clusterrole")))
    assert keys.work_name("default", "nginx", "Deployment") != keys.work_name("other", "nginx", "Deployment")


def test_execution_namespace() -> None:
    assert keys.execution_namespace("member1") == "karmada-es-member1"
    assert keys.cluster_of_execution_namespace("karmada-es-member1") == "member1"
    assert keys.cluster_of_execution_namespace("karmada-es-") is None
    assert keys.cluster_of_execution_namespace("default") is None


# -- registry -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Cluster", "Cluster"),
        ("clusters", "Cluster"),
        ("CLUSTER", "Cluster"),
        ("pp", "PropagationPolicy"),
        ("propagationpolicy", "PropagationPolicy"),
        ("PropagationPolicies", "PropagationPolicy"),
        ("cpp", "ClusterPropagationPolicy"),
        ("rb", "ResourceBinding"),
        ("resourcebindings.work.karmada.io", "ResourceBinding"),
        ("crb", "ClusterResourceBinding"),
        ("works", "Work"),
        ("clustertaintpolicies", "ClusterTaintPolicy"),
        ("leases", "Lease"),
        ("events", "Event"),
        ("ev", "Event"),
        ("deploy", "Deployment"),
        ("deployments", "Deployment"),
        ("deployments.apps", "Deployment"),
        ("sts", "StatefulSet"),
        ("cm", "ConfigMap"),
    ],
)
def test_lookup(name: str, kind: str) -> None:
    assert registry.lookup(name).kind == kind


def test_lookup_unknown() -> None:
    with pytest.raises(registry.UnknownResourceError, match='resource type "frobnicators"'):
        registry.lookup("frobnicators")


def test_builtin_types() -> None:
    cluster = registry.lookup("clusters")
    assert (cluster.api_version, cluster.plural, cluster.resource, cluster.namespaced) == (
        "cluster.karmada.io/v1alpha1",
        "clusters",
        "clusters",
        False,
    )
    assert cluster.message is cluster_pb2.Cluster
    assert cluster.group == "cluster.karmada.io"
    assert cluster.version == "v1alpha1"
    assert not cluster.is_template
    rb = registry.lookup("rb")
    assert (rb.api_version, rb.namespaced, rb.message) == ("work.karmada.io/v1alpha2", True, work_pb2.ResourceBinding)
    assert registry.lookup("crb").message is work_pb2.ClusterResourceBinding
    assert registry.lookup("work").api_version == "work.karmada.io/v1alpha1"
    assert registry.lookup("event").message is core_pb2.Event
    assert registry.lookup("event").group == ""


def test_for_kind_builtin_and_message() -> None:
    rt = registry.for_kind("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy")
    assert rt.message is policy_pb2.ClusterPropagationPolicy
    assert registry.for_message(policy_pb2.ClusterPropagationPolicy) is rt
    assert registry.for_object(policy_pb2.ClusterPropagationPolicy()) is rt
    with pytest.raises(registry.UnknownResourceError):
        registry.for_message(meta_pb2.Unstructured)


def test_for_kind_requires_both_fields() -> None:
    with pytest.raises(registry.UnknownResourceError, match="apiVersion and kind are required"):
        registry.for_kind("", "")
    with pytest.raises(registry.UnknownResourceError, match="apiVersion and kind are required"):
        registry.for_kind("apps/v1", "")
    # A built-in message knows its type even when the fields are empty.
    assert registry.for_object(cluster_pb2.Cluster()).kind == "Cluster"


def test_for_kind_rejects_builtin_kind_at_other_version() -> None:
    with pytest.raises(registry.UnknownResourceError, match=r"work\.karmada\.io/v1alpha2"):
        registry.for_kind("work.karmada.io/v1alpha1", "ResourceBinding")


@pytest.mark.parametrize(
    ("api_version", "kind", "plural", "resource", "namespaced"),
    [
        ("apps/v1", "Deployment", "deployments", "deployments.apps", True),
        ("networking.k8s.io/v1", "Ingress", "ingresses", "ingresses.networking.k8s.io", True),
        ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", "networkpolicies.networking.k8s.io", True),
        ("v1", "ConfigMap", "configmaps", "configmaps", True),
        ("v1", "Namespace", "namespaces", "namespaces", False),
        ("v1", "PersistentVolume", "persistentvolumes", "persistentvolumes", False),
        ("v1", "Node", "nodes", "nodes", False),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            "clusterroles.rbac.authorization.k8s.io",
            False,
        ),
        ("rbac.authorization.k8s.io/v1", "Role", "roles", "roles.rbac.authorization.k8s.io", True),
        ("storage.k8s.io/v1", "StorageClass", "storageclasses", "storageclasses.storage.k8s.io", False),
        ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", "priorityclasses.scheduling.k8s.io", False),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinitions.apiextensions.k8s.io",
            False,
        ),
        ("flink.apache.org/v1beta1", "FlinkDeployment", "flinkdeployments", "flinkdeployments.flink.apache.org", True),
        ("example.com/v1", "Policy", "policies", "policies.example.com", True),
        ("gateway.networking.k8s.io/v1", "Gateway", "gateways", "gateways.gateway.networking.k8s.io", True),
    ],
)
def test_for_kind_templates(api_version: str, kind: str, plural: str, resource: str, namespaced: bool) -> None:
    rt = registry.for_kind(api_version, kind)
    assert rt.message is meta_pb2.Unstructured
    assert rt.is_template
    assert (rt.plural, rt.resource, rt.namespaced) == (plural, resource, namespaced)


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Deployment", "deployments"),
        ("Ingress", "ingresses"),
        ("Policy", "policies"),
        ("NetworkPolicy", "networkpolicies"),
        ("Gateway", "gateways"),
        ("Mailbox", "mailboxes"),
        ("Patch", "patches"),
        ("StatefulSet", "statefulsets"),
    ],
)
def test_plural_of(kind: str, plural: str) -> None:
    assert registry.plural_of(kind) == plural


def test_resources_are_unique() -> None:
    resources = [rt.resource for rt in (*registry.BUILTINS, *registry.WELL_KNOWN_TEMPLATES)]
    assert len(resources) == len(set(resources))


@pytest.mark.parametrize(("api_version", "kind"), [("v1", "Work"), ("v1", "Lease"), ("v1", "Endpoints"),
                                                   ("v1", "Endpoint"), ("v1", "Cluster")])
def test_a_core_kind_stored_where_flotilla_keeps_its_own_is_refused(api_version: str, kind: str) -> None:
    with pytest.raises(registry.UnknownResourceError, match="where Flotilla keeps its own"):
        registry.for_kind(api_version, kind)


def test_the_reserved_segments_are_every_prefix_flotilla_writes() -> None:
    from flotilla.store.endpoints import ENDPOINTS_PREFIX
    from flotilla.store.leader import ELECTION_PREFIX
    for prefix in (ENDPOINTS_PREFIX, ELECTION_PREFIX):
        assert prefix.removeprefix("/flotilla/").strip("/") in registry.RESERVED_RESOURCES


def test_a_reserved_template_cannot_be_named_either() -> None:
    # `flotillactl get endpoints` would otherwise list the service endpoint registry.
    with pytest.raises(registry.UnknownResourceError):
        registry.lookup("endpoints")
