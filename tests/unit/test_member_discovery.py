"""Discovery documents -> apiEnablements, as Karmada collects them."""

from flotilla.member.discovery import ApiResource, api_enablements, group_versions, resources_of

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
