from __future__ import annotations

from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec, wellknown
from flotilla.api.conditions import set_condition
from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import cluster_pb2, work_pb2
from flotilla.runtime.own_writes import OwnWrites
from flotilla.store.base import copy_of
from services.executor import routing
from tests.unit.cache_fake import Cache

ADDED, MODIFIED, DELETED = EventType.ADDED, EventType.MODIFIED, EventType.DELETED


def deployment(name: str, namespace: str = "default", **spec: Any) -> Any:
    return codec.from_dict({"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": name, "namespace": namespace}, "spec": spec})


def rb(name: str, generation: int = 1, propagate_deps: bool = False, **labels: str) -> work_pb2.ResourceBinding:
    b = work_pb2.ResourceBinding()
    b.metadata.name, b.metadata.namespace, b.metadata.generation = name, "default", generation
    b.metadata.labels.update(labels)
    b.spec.resource.api_version, b.spec.resource.kind = "apps/v1", "Deployment"
    b.spec.resource.namespace, b.spec.resource.name = "default", name.removesuffix("-deployment")
    b.spec.propagate_deps = propagate_deps
    return b


def work(name: str, binding: str | None = "web-deployment") -> work_pb2.Work:
    w = work_pb2.Work()
    w.metadata.name, w.metadata.namespace = name, "karmada-es-m1"
    if binding is not None:
        w.metadata.annotations[wellknown.RB_NAME_ANNOTATION] = binding
        w.metadata.annotations[wellknown.RB_NAMESPACE_ANNOTATION] = "default"
    return w


def test_template_event_routes_to_detector_binding_and_distributor() -> None:
    event = WatchEvent(ADDED, deployment("web"))
    assert routing.template_spec_changed(event)
    assert routing.template(event) == ["apps/v1/Deployment:default/web"]
    assert routing.binding_of_template(event) == ["ResourceBinding:default/web-deployment"]
    assert list(routing.dependents_of_template({})(event)) == ["ResourceBinding:default/web-deployment"]


def test_a_status_only_template_change_is_ignored() -> None:
    old, new = deployment("web", replicas=2), deployment("web", replicas=2)
    new_dict = codec.to_dict(new)
    new_dict["status"] = {"readyReplicas": 2}
    assert not routing.template_spec_changed(WatchEvent(MODIFIED, codec.from_dict(new_dict), old))
    scaled = deployment("web", replicas=3)
    scaled.metadata.generation = old.metadata.generation + 1  # as the store writes a spec change
    assert routing.template_spec_changed(WatchEvent(MODIFIED, scaled, old))


@pytest.mark.parametrize(("event", "spec", "scheduled", "deps"), [
    (WatchEvent(ADDED, rb("web-deployment")), True, True, False),
    (WatchEvent(MODIFIED, rb("web-deployment", 2), rb("web-deployment")), True, True, False),
    (WatchEvent(MODIFIED, rb("web-deployment", 1, a="b"), rb("web-deployment")), True, False, False),
    (WatchEvent(MODIFIED, rb("web-deployment"), rb("web-deployment")), False, False, False),
    (WatchEvent(MODIFIED, rb("web-deployment", 2, True), rb("web-deployment")), True, True, True),
    (WatchEvent(DELETED, rb("web-deployment", 1, True)), True, True, True),
])
def test_binding_predicates(event: WatchEvent[Any], spec: bool, scheduled: bool, deps: bool) -> None:
    assert routing.binding_spec_changed(event) is spec
    assert routing.binding_scheduled(event) is scheduled
    assert routing.propagates_deps(event) is deps
    assert routing.binding("ResourceBinding")(event) == ["ResourceBinding:default/web-deployment"]


def test_the_schedulers_decision_of_an_evicted_binding_brings_its_aggregation() -> None:
    """Aggregation waits while the scheduler has yet to decide an evicted binding's generation
    (awaits_reschedule); the decision, even one that writes no placement, ends the wait."""
    waiting = rb("web-deployment", 3)
    waiting.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = "p-1"
    waiting.spec.graceful_eviction_tasks.add(from_cluster="member1")
    waiting.status.scheduler_observed_generation = 2
    decided = copy_of(waiting)
    decided.status.scheduler_observed_generation = 3
    assert routing.binding_scheduled(WatchEvent(MODIFIED, decided, waiting))
    assert not routing.binding_scheduled(WatchEvent(MODIFIED, copy_of(decided), decided))


def test_an_attached_binding_that_goes_brings_back_its_workloads() -> None:
    attached = rb("cm-configmap", **{"resourcebinding.karmada.io/depended-by-abc": "default_web-deployment"})
    assert routing.workloads_depending_on(WatchEvent(DELETED, attached)) == [
        "ResourceBinding:default/web-deployment"]
    assert routing.workloads_depending_on(WatchEvent(MODIFIED, attached, attached)) == []


def test_a_new_binding_of_a_template_kind_looks_at_its_template() -> None:
    event = WatchEvent(ADDED, rb("web-deployment"))
    assert routing.binding_came_or_went(event)
    assert routing.template_of_binding(event) == ["apps/v1/Deployment:default/web"]
    assert not routing.binding_came_or_went(WatchEvent(MODIFIED, rb("web-deployment"), rb("web-deployment")))


def versioned(binding: work_pb2.ResourceBinding, version: str) -> work_pb2.ResourceBinding:
    binding = copy_of(binding)
    binding.metadata.resource_version = version
    return binding


@pytest.mark.parametrize(("event", "routed"), [
    # The detector's own creation coming back: decided already, from the template as it was.
    (WatchEvent(ADDED, versioned(rb("web-deployment"), "7")), False),
    # Written again by someone else before the watch delivered it: a version of its own.
    (WatchEvent(ADDED, versioned(rb("web-deployment"), "8")), True),
    # Another template's binding, which the detector did not create (a relist, another replica's).
    (WatchEvent(ADDED, versioned(rb("api-deployment"), "7")), True),
    # Gone: its template may want a new one.
    (WatchEvent(DELETED, versioned(rb("web-deployment"), "7")), True),
    (WatchEvent(MODIFIED, versioned(rb("web-deployment"), "9"), versioned(rb("web-deployment"), "7")), False),
])
def test_the_detector_is_not_brought_back_by_the_bindings_it_created(event: WatchEvent[Any], routed: bool) -> None:
    created = OwnWrites()
    created.record(versioned(rb("web-deployment"), "7"))
    assert routing.binding_came_or_went_elsewhere(created)(event) is routed


def test_work_events_route_to_its_binding() -> None:
    w = work("w1")
    assert routing.binding_of_work(WatchEvent(ADDED, w)) == ["ResourceBinding:default/web-deployment"]
    assert routing.binding_of_work(WatchEvent(ADDED, work("w2", None))) == []
    status = work("w1")
    status.status.manifest_statuses.add()
    event = WatchEvent(MODIFIED, status, w)
    assert routing.work_status_changed(event) and not routing.work_spec_changed(event)


def _deleting(w: Any) -> Any:
    w.metadata.deletion_timestamp.FromSeconds(1)
    return w


@pytest.mark.parametrize(("event", "aggregated"), [
    # A new Work has no status to aggregate (Karmada's binding-status controller ignores creates).
    (WatchEvent(ADDED, work("w1")), False),
    (WatchEvent(MODIFIED, work("w1"), work("w1")), False),
    (WatchEvent(MODIFIED, _deleting(work("w1")), work("w1")), True),  # its item goes
    (WatchEvent(DELETED, work("w1")), True),
])
def test_which_work_events_the_binding_status_aggregates(event: WatchEvent[Any], aggregated: bool) -> None:
    assert routing.work_status_changed(event) is aggregated


def test_policy_selects_templates_in_its_namespace_and_claimed_ones() -> None:
    policy = codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
    })
    event = WatchEvent(ADDED, policy)
    assert routing.policy_changed(event)
    assert routing.selected_kinds(event) == [("apps/v1", "Deployment")]
    templates = {"deployments.apps": Cache([deployment("web"), deployment("db", namespace="other")])}
    assert list(routing.selected_templates(templates)(event)) == ["apps/v1/Deployment:default/web"]
    assert not routing.policy_changed(WatchEvent(MODIFIED, policy, policy))
    assert routing.finalizing_policy(event) == []


def cluster(name: str, ready: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster()
    c.metadata.name = name
    set_condition(c.status.conditions, "Ready", ready, "", "", FakeClock().now())
    return c


def test_a_cluster_becoming_ready_releases_its_works() -> None:
    works_cache = Cache([work("w1"), work("w2")], namespace=lambda w: [w.metadata.namespace])
    became_ready = WatchEvent(MODIFIED, cluster("m1", "True"), cluster("m1", "False"))
    assert routing.readiness_changed(became_ready)
    assert routing.works_of_cluster(works_cache)(became_ready) == ["karmada-es-m1/w1", "karmada-es-m1/w2"]
    same = WatchEvent(MODIFIED, cluster("m1", "True"), cluster("m1", "True"))
    assert not routing.readiness_changed(same)
    assert routing.work(WatchEvent(ADDED, work("w1"))) == ["karmada-es-m1/w1"]


def applied(w: work_pb2.Work, status: str, generation: int) -> work_pb2.Work:
    set_condition(w.status.conditions, "Applied", status, "", "", FakeClock().now(), generation)
    return w


def edited(w: work_pb2.Work, edit: Any) -> work_pb2.Work:
    new = work_pb2.Work()
    new.CopyFrom(w)
    edit(new)
    return new


BASE = applied(work("w1"), "True", 1)


def generation(w: work_pb2.Work, number: int) -> work_pb2.Work:
    w.metadata.generation = number
    return w


APPLIED_1 = applied(generation(work("w1"), 1), "True", 1)


@pytest.mark.parametrize(("event", "acted_on"), [
    (WatchEvent(ADDED, work("w1")), True),
    (WatchEvent(DELETED, work("w1")), False),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: setattr(w.metadata, "generation", 2)), BASE), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.metadata.deletion_timestamp.GetCurrentTime()), BASE), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.metadata.finalizers.append("f")), BASE), True),
    # The work-status controller found a manifest missing: applied again.
    (WatchEvent(MODIFIED, applied(edited(BASE, lambda _: None), "False", 1), BASE), True),
    (WatchEvent(MODIFIED, BASE, applied(work("w1"), "True", 0)), True),
    (WatchEvent(MODIFIED, BASE, work("w1")), True),
    # Manifest statuses only: what the work-status controller writes itself.
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.status.manifest_statuses.add(health="Healthy")), BASE), False),
])
def test_the_execution_side_acts_on_a_works_apply_state_not_its_manifest_statuses(
        event: WatchEvent[Any], acted_on: bool) -> None:
    assert routing.work_apply_state_changed(event) is acted_on


@pytest.mark.parametrize(("event", "due"), [
    (WatchEvent(ADDED, work("w1")), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: setattr(w.metadata, "generation", 2)), BASE), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.metadata.deletion_timestamp.GetCurrentTime()), BASE), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.metadata.finalizers.append("f")), BASE), True),
    # The work-status controller found a manifest missing: applied again.
    (WatchEvent(MODIFIED, applied(edited(BASE, lambda _: None), "False", 1), BASE), True),
    # The execution controller's own report of the apply: nothing left to do.
    (WatchEvent(MODIFIED, APPLIED_1, applied(generation(work("w1"), 1), "True", 0)), False),
    (WatchEvent(MODIFIED, APPLIED_1, generation(work("w1"), 1)), False),
    # Applied, but not at the Work's generation.
    (WatchEvent(MODIFIED, BASE, work("w1")), True),
    (WatchEvent(MODIFIED, edited(BASE, lambda w: w.status.manifest_statuses.add(health="Healthy")), BASE), False),
])
def test_the_execution_controller_is_not_woken_by_its_own_report_of_an_apply(
        event: WatchEvent[Any], due: bool) -> None:
    assert routing.work_apply_due(event) is due


def test_a_status_write_is_told_apart_without_parsing_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    old = deployment("web", replicas=2)
    new_dict = codec.to_dict(old)
    new_dict["status"] = {"readyReplicas": 2}

    def parsed(_: Any) -> Any:
        raise AssertionError("the template was parsed")

    monkeypatch.setattr(routing, "_template_spec", parsed)
    assert not routing.template_spec_changed(WatchEvent(MODIFIED, codec.from_dict(new_dict), old))
