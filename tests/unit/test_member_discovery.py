"""Discovery documents -> apiEnablements, as Karmada collects them."""

import hashlib
import json

import pytest

from flotilla.member.discovery import (
    AGGREGATED_ACCEPT,
    ApiResource,
    api_enablements,
    group_versions,
    resource_lists,
    resources_of,
)
from sim.catalog import (
    Catalog,
    ResourceType,
    aggregated_discovery,
    aggregated_discovery_document,
    api_resource_list,
    wants_aggregated_discovery,
)

APPS = {"groupVersion": "apps/v1", "resources": [
    {"name": "statefulsets", "kind": "StatefulSet", "namespaced": True},
    {"name": "deployments/scale", "kind": "Scale", "namespaced": True},
    {"name": "deployments", "kind": "Deployment", "namespaced": True},
    {"name": "deployments/status", "kind": "Deployment", "namespaced": True},
]}
CORE = {"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod", "namespaced": True},
                                            {"name": "nodes", "kind": "Node", "namespaced": False}]}


def test_every_version_of_every_group_is_listed() -> None:
    groups = {"groups": [{"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
                         {"name": "x.io", "versions": [{"groupVersion": "x.io/v2", "version": "v2"},
                                                        {"groupVersion": "x.io/v1", "version": "v1"}]}]}
    assert group_versions({"versions": ["v1"]}, groups) == ["v1", "apps/v1", "x.io/v2", "x.io/v1"]


def test_subresources_are_skipped_and_paths_follow_the_group() -> None:
    found = resources_of(APPS)
    assert [r.name for r in found] == ["statefulsets", "deployments"]
    assert found[1] == ApiResource("apps/v1", "deployments", "Deployment", True)
    assert found[1].base_path == "/apis/apps/v1"
    assert resources_of(CORE)[1].base_path == "/api/v1"


def test_enablements_are_sorted_by_group_version_then_name() -> None:
    empty = {"groupVersion": "batch/v1", "resources": []}
    assert api_enablements([CORE, APPS, empty]) == [
        ("apps/v1", [("deployments", "Deployment"), ("statefulsets", "StatefulSet")]),
        ("batch/v1", []),
        ("v1", [("nodes", "Node"), ("pods", "Pod")]),
    ]


def test_aggregated_discovery_reads_as_the_plain_documents() -> None:
    catalog = Catalog.with_builtins()
    plain = [api_resource_list(catalog, g, v) for g, vs in catalog.group_versions().items() for v in vs]
    lists = resource_lists(aggregated_discovery(catalog, core=True), aggregated_discovery(catalog, core=False))
    assert lists is not None
    assert api_enablements(lists) == api_enablements([p for p in plain if p is not None])
    by_version = {resource_list["groupVersion"]: resources_of(resource_list) for resource_list in lists}
    assert ApiResource("apps/v1", "deployments", "Deployment", True) in by_version["apps/v1"]
    assert ApiResource("v1", "nodes", "Node", False) in by_version["v1"]


def test_plain_discovery_documents_are_not_aggregated() -> None:
    assert resource_lists({"kind": "APIVersions", "versions": ["v1"]}, {"kind": "APIGroupList", "groups": []}) is None


@pytest.mark.parametrize(("accept", "aggregated"), [
    (AGGREGATED_ACCEPT, True),
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", True),
    # client-go's own order; protobuf first passed over, the simulator speaking JSON only.
    ("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", True),
    ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", False),
    ("application/json", False), ("", False), ("*/*", False),
    ("application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", False),
])
def test_the_simulator_answers_aggregated_discovery_when_asked_first(accept: str, aggregated: bool) -> None:
    assert wants_aggregated_discovery(accept) is aggregated


def test_the_aggregated_document_carries_the_api_servers_etag_which_changes_with_the_apis() -> None:
    catalog = Catalog.with_builtins()
    body, etag = aggregated_discovery_document(catalog, core=False)
    assert json.loads(body) == aggregated_discovery(catalog, core=False)
    assert etag == f'"{hashlib.sha512(body).hexdigest().upper()}"'
    assert aggregated_discovery_document(catalog, core=False) == (body, etag)
    core_etag = aggregated_discovery_document(catalog, core=True)[1]
    catalog.add(ResourceType("example.com", "v1", "Widget", "widgets", True))
    assert aggregated_discovery_document(catalog, core=False)[1] != etag
    assert aggregated_discovery_document(catalog, core=True)[1] == core_etag
