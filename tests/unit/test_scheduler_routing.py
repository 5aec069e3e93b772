from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2
from flotilla.scheduler.plugin_api import ClusterInfo
from services.scheduler.reconciler import retry_delay
from services.scheduler.routing import (
    affected_by,
    binding_keys,
    bindings_affected_by_cluster,
    bindings_not_scheduled,
    cluster_change_matters,
    cluster_status_matters,
    deleted,
    only_taints_added,
)
from tests.unit.cache_fake import Cache

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED


def cluster(generation: int = 1, *taints: str, region: str = "", **labels: str) -> cluster_pb2.Cluster:
    """`taints` as `key=value:Effect`."""
    c = cluster_pb2.Cluster()
    c.metadata.name, c.metadata.generation = "m1", generation
    c.metadata.labels.update(labels)
    c.spec.region = region
    for taint in taints:
        key_value, effect = taint.split(":")
        key, _, value = key_value.partition("=")
        c.spec.taints.add(key=key, value=value, effect=effect)
    return c


NOT_READY = "cluster.karmada.io/not-ready:NoSchedule"
NOT_READY_EXECUTE = "cluster.karmada.io/not-ready:NoExecute"


def rb(name: str, env: str | None = None, on: str | None = None) -> Any:
    placement: dict[str, Any] = {}
    if env is not None:
        placement["clusterAffinity"] = {"labelSelector": {"matchLabels": {"env": env}}}
    b = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                         "metadata": {"name": name, "namespace": "default"}, "spec": {"placement": placement}})
    if on is not None:
        b.spec.clusters.add(name=on, replicas=1)
    return b


@pytest.mark.parametrize(("event", "matters"), [
    (WatchEvent(ADDED, cluster()), True),
    (WatchEvent(MODIFIED, cluster(2), cluster(1)), True),
    (WatchEvent(MODIFIED, cluster(env="prod"), cluster()), True),
    (WatchEvent(MODIFIED, cluster(), cluster()), False),  # a status write
    (WatchEvent(DELETED, cluster()), False),
    # Taints added and nothing else: no placement changes (TaintToleration passes the clusters a
    # binding is on; evicting from them is the taint manager's).
    (WatchEvent(MODIFIED, cluster(2, NOT_READY, NOT_READY_EXECUTE), cluster(1)), False),
    (WatchEvent(MODIFIED, cluster(3, NOT_READY, NOT_READY_EXECUTE), cluster(2, NOT_READY)), False),
    # A taint gone may let bindings onto the cluster.
    (WatchEvent(MODIFIED, cluster(2), cluster(1, NOT_READY)), True),
    (WatchEvent(MODIFIED, cluster(2, NOT_READY_EXECUTE), cluster(1, NOT_READY)), True),
    (WatchEvent(MODIFIED, cluster(2, "team=a:NoSchedule"), cluster(1, "team=b:NoSchedule")), True),
    # Taints added along with anything else in the spec, or the labels.
    (WatchEvent(MODIFIED, cluster(2, NOT_READY, region="eu"), cluster(1)), True),
    (WatchEvent(MODIFIED, cluster(2, NOT_READY, env="prod"), cluster(1)), True),
])
def test_which_cluster_changes_matter(event: WatchEvent[Any], matters: bool) -> None:
    assert cluster_change_matters(event) is matters


def test_a_cluster_change_reaches_bindings_it_may_move() -> None:
    bindings = Cache([rb("any"), rb("prod", env="prod"), rb("dev", env="dev"), rb("dev-on-m1", env="dev", on="m1")])
    event = WatchEvent(MODIFIED, cluster(env="prod"), cluster())
    assert bindings_affected_by_cluster(bindings)(event) == ["default/any", "default/prod", "default/dev-on-m1"]


def terms(*names: str, observed: str | None = None) -> Any:
    """A binding with clusterAffinities terms (`name=env`), the term `observed` scheduled on at its generation."""
    b = codec.from_dict({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                         "metadata": {"name": "t", "namespace": "default", "generation": 1},
                         "spec": {"placement": {"clusterAffinities": [
                             {"affinityName": name, "labelSelector": {"matchLabels": {"env": env}}}
                             for name, env in (n.split("=") for n in names)]}}})
    if observed is not None:
        b.status.scheduler_observed_generation = 1
        b.status.scheduler_observing_affinity_name = observed
    return b


@pytest.mark.parametrize(("binding", "affected"), [
    (rb("any"), True),
    (rb("prod", env="prod"), True),
    (rb("dev", env="dev"), False),
    (rb("dev-on-m1", env="dev", on="m1"), True),
    (rb("dev-on-m2", env="dev", on="m2"), False),
    (terms("a=dev", "b=prod"), True),  # not scheduled at this generation: any term may be next
    (terms("a=dev", "b=prod", observed="a"), False),
    (terms("a=dev", "b=prod", observed="b"), True),
    (terms("a=dev", "b=prod", observed="gone"), True),
])
def test_which_bindings_a_cluster_may_move(binding: Any, affected: bool) -> None:
    assert affected_by(binding, ClusterInfo.from_cluster(cluster(env="prod"))) is affected


@pytest.mark.parametrize(("old", "new", "only_added"), [
    (cluster(1), cluster(2, NOT_READY), True),
    (cluster(1, NOT_READY), cluster(2, NOT_READY, NOT_READY_EXECUTE), True),
    (cluster(1, NOT_READY), cluster(2, NOT_READY), False),  # none added
    (cluster(1, NOT_READY), cluster(2), False),
    (cluster(1, NOT_READY), cluster(2, NOT_READY_EXECUTE), False),  # one added, one gone
    (cluster(1), cluster(2, NOT_READY, region="eu"), False),
])
def test_only_taints_added(old: cluster_pb2.Cluster, new: cluster_pb2.Cluster, only_added: bool) -> None:
    assert only_taints_added(old, new) is only_added


@pytest.mark.parametrize(("event", "gone"), [
    (WatchEvent(ADDED, cluster()), False),
    (WatchEvent(MODIFIED, cluster(2), cluster(1)), False),
    (WatchEvent(DELETED, cluster()), True),
])
def test_deleted(event: WatchEvent[Any], gone: bool) -> None:
    assert deleted(event) is gone


def test_a_binding_is_its_own_key() -> None:
    assert binding_keys(WatchEvent(ADDED, rb("x"))) == ["default/x"]


def status(ready: str = "True", apis: bool = True) -> cluster_pb2.Cluster:
    c = cluster()
    c.status.conditions.add(type="Ready", status=ready)
    if apis:
        c.status.api_enablements.add(group_version="apps/v1").resources.add(name="deployments", kind="Deployment")
    return c


@pytest.mark.parametrize(("event", "matters"), [
    (WatchEvent(MODIFIED, status(apis=True), status(apis=False)), True),
    (WatchEvent(MODIFIED, status(ready="True"), status(ready="False")), True),
    (WatchEvent(MODIFIED, status(), status()), False),  # a new resource summary, say
    (WatchEvent(ADDED, status()), False),
    (WatchEvent(MODIFIED, cluster(2), cluster(1)), False),  # cluster_change_matters' to handle
])
def test_which_cluster_status_changes_matter(event: WatchEvent[Any], matters: bool) -> None:
    assert cluster_status_matters(event) is matters


def test_a_cluster_status_change_reaches_the_bindings_not_scheduled() -> None:
    failed, placed = rb("failed"), rb("placed")
    failed.status.conditions.add(type="Scheduled", status="False", reason="NoClusterFit")
    placed.status.conditions.add(type="Scheduled", status="True", reason="Success")
    bindings = Cache([failed, placed, rb("new")])
    event = WatchEvent(MODIFIED, status(apis=True), status(apis=False))
    assert bindings_not_scheduled(bindings)(event) == ["default/failed"]


def test_retries_back_off_to_the_longest_wait() -> None:
    assert [retry_delay(n, 1.0, 30.0) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert retry_delay(10_000, 1.0, 30.0) == 30
