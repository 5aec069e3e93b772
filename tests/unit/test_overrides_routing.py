"""Which bindings the executor's binding controller looks at again when an override policy or
a Cluster changes (services/executor/routing.py), as tables over fake informer caches."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from services.executor import routing
from tests.unit.cache_fake import Cache
from tests.unit.test_executor_routing import work

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED


def template(kind: str, name: str, namespace: str = "default", **labels: str) -> Any:
    api_version = "v1" if kind == "ConfigMap" else "apps/v1"
    return codec.from_dict({"apiVersion": api_version, "kind": kind,
                            "metadata": {"name": name, "namespace": namespace, "labels": labels}})


TEMPLATES: dict[str, Any] = {
    "deployments.apps": Cache([template("Deployment", "web", app="web"), template("Deployment", "db"),
                               template("Deployment", "web", namespace="other")]),
    "configmaps": Cache([template("ConfigMap", "settings")]),
}


def op(selectors: list[dict[str, Any]] | None, cluster_scoped: bool = False, namespace: str = "default") -> Any:
    kind = "ClusterOverridePolicy" if cluster_scoped else "OverridePolicy"
    metadata = {"name": "p"} if cluster_scoped else {"name": "p", "namespace": namespace}
    spec = {"resourceSelectors": selectors} if selectors is not None else {}
    return codec.from_dict({"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata,
                            "spec": spec})


DEPLOYMENTS = {"apiVersion": "apps/v1", "kind": "Deployment"}
ROUTES = [
    ("by name", op([{**DEPLOYMENTS, "name": "web"}]), ["ResourceBinding:default/web-deployment"]),
    ("by label", op([{**DEPLOYMENTS, "labelSelector": {"matchLabels": {"app": "web"}}}]),
     ["ResourceBinding:default/web-deployment"]),
    ("by kind, own namespace only", op([DEPLOYMENTS]),
     ["ResourceBinding:default/db-deployment", "ResourceBinding:default/web-deployment"]),
    ("no selectors: every template of the namespace", op(None),
     ["ResourceBinding:default/db-deployment", "ResourceBinding:default/settings-configmap",
      "ResourceBinding:default/web-deployment"]),
    ("cluster policy: every namespace", op([{**DEPLOYMENTS, "name": "web"}], cluster_scoped=True),
     ["ResourceBinding:default/web-deployment", "ResourceBinding:other/web-deployment"]),
    ("another namespace's policy", op([DEPLOYMENTS], namespace="third"), []),
    ("a kind nobody watches", op([{"apiVersion": "batch/v1", "kind": "Job"}]), []),
]


@pytest.mark.parametrize(("name", "policy", "keys"), ROUTES, ids=[r[0] for r in ROUTES])
def test_policy_routes_to_the_bindings_of_what_it_selects(name: str, policy: Any, keys: list[str]) -> None:
    assert list(routing.bindings_of_overridden(TEMPLATES)(WatchEvent(ADDED, policy))) == keys


def test_an_edit_routes_to_what_either_version_selects() -> None:
    old, new = op([{**DEPLOYMENTS, "name": "web"}]), op([{**DEPLOYMENTS, "name": "db"}])
    assert list(routing.bindings_of_overridden(TEMPLATES)(WatchEvent(MODIFIED, new, old))) == [
        "ResourceBinding:default/db-deployment", "ResourceBinding:default/web-deployment"]
    assert routing.override_policy_changed(WatchEvent(MODIFIED, new, old))
    relabelled = op([{**DEPLOYMENTS, "name": "web"}])
    relabelled.metadata.labels["x"] = "y"
    assert not routing.override_policy_changed(WatchEvent(MODIFIED, relabelled, old))
    assert routing.override_policy_changed(WatchEvent(DELETED, old))


def cluster(name: str = "m1", **labels: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name = name
    c.metadata.labels.update(labels)
    return c


def test_a_cluster_routes_to_the_bindings_with_a_work_there_when_what_rules_read_changes() -> None:
    old, new = cluster(env="a"), cluster(env="b")
    assert routing.cluster_selection_changed(WatchEvent(MODIFIED, new, old))
    regioned = cluster(env="a")
    regioned.spec.region = "eu"
    assert routing.cluster_selection_changed(WatchEvent(MODIFIED, regioned, old))
    same = cluster(env="a")
    same.spec.api_endpoint = "https://elsewhere"
    assert not routing.cluster_selection_changed(WatchEvent(MODIFIED, same, old))
    assert not routing.cluster_selection_changed(WatchEvent(ADDED, new))
    works = Cache([work("w1"), work("w2", binding="db-deployment"), work("w3", binding=None)])
    assert list(routing.bindings_in_cluster(works)(WatchEvent(MODIFIED, new, old))) == [  # type: ignore[arg-type]
        "ResourceBinding:default/db-deployment", "ResourceBinding:default/web-deployment"]
    assert list(routing.bindings_in_cluster(works)(WatchEvent(MODIFIED, cluster("m2"), cluster("m2")))) == []  # type: ignore[arg-type]
