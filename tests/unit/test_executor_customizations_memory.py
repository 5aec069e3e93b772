"""ResourceInterpreterCustomization scripts through the executor's detector, binding controller,
binding-status controller and dependencies distributor on a MemoryStore, run in the executor's own
ScriptPool: Karmada's FlinkDeployment customization, unchanged, makes a Divided policy split a
FlinkDeployment by its replicas and aggregates its status; a Widget's ReviseReplica gives each
cluster its share and its GetDependencies sends a ConfigMap along; and a script without an answer
changes nothing (the binding keeps its replicas, the Works, the template's status and the
attached dependents stay) and says why in an Event."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, keys, registry
from flotilla.api.conditions import set_condition
from flotilla.api.v1 import core_pb2, work_pb2
from flotilla.interpreter.customized import CustomizedInterpreter
from flotilla.scheduler import core
from flotilla.scheduler.framework import Framework
from flotilla.store import ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.executor import policy_match
from services.executor.controllers import ExecutorConfig, ExecutorControllers
from services.executor.detector import SELECTOR_INDEX, ReplicasNotInterpreted, TemplateReconciler, template_key
from tests.background import in_background
from tests.factories import EXAMPLES_DIR
from tests.unit.test_executor_binding_flow_memory import manifest, schedule, watching, work_in

POLICY_ID = "0d9a3f0e-7f55-4c43-9d0e-3a1f9e4c2b11"
FLINK = ("flink.apache.org/v1beta1", "FlinkDeployment")
WIDGET = registry.for_kind("example.io/v1", "Widget")
WIDGET_WORK = keys.work_name("default", "w", "Widget")


@contextlib.asynccontextmanager
async def running(store: ObjectStore, gates: dict[str, bool] | None = None) -> AsyncIterator[ExecutorControllers]:
    controllers = ExecutorControllers(store, RealClock(), ExecutorConfig(feature_gates=gates or {}),
                                      events=EventRecorder(store, "executor"), interpreter_timeout=1.0)
    async with in_background(controllers.run()):
        yield controllers


def claimed(policy: Any) -> Any:
    # As admission stamps it.
    policy.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = POLICY_ID
    return policy


def member(name: str, cpu: str = "16") -> Any:
    return codec.from_dict({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "status": {"apiEnablements": [{"groupVersion": FLINK[0],
                                       "resources": [{"name": "flinkdeployments", "kind": FLINK[1]}]}],
                   "resourceSummary": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
                   "conditions": [{"type": "Ready", "status": "True"}]}})


async def warnings(store: ObjectStore, reason: str) -> list[core_pb2.Event]:
    return [e for e in (await store.list(registry.EVENT)).items if e.reason == reason]


async def test_karmadas_flink_customization_divides_a_flink_deployment(store: ObjectStore) -> None:
    customization, template, policy = (codec.from_dict(d) for d in codec.load_yaml_documents(
        (EXAMPLES_DIR / "flink-customization.yaml").read_text()))
    for obj in (customization, template, claimed(policy)):
        await store.create(obj)
    name = "flink-divided-flinkdeployment"
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get(f"default/{name}") is not None)
        binding = bindings.informer.get(f"default/{name}")
        # GetReplicas: 1 JobManager + 2 TaskManagers, the larger of their requests.
        assert binding.spec.replicas == 3
        assert codec.to_dict(binding.spec.replica_requirements) == {
            "resourceRequest": {"cpu": "1", "memory": "2048m"}, "namespace": "default"}

        # The scheduler divides it 1:2 as the policy's static weights say.
        snapshot = core.Snapshot.of([member("member1"), member("member2")], datetime.now(UTC))
        decision = core.schedule(binding, snapshot, Framework.build("*", installed={}))
        assert decision.ok, decision.message
        assert decision.clusters == [("member1", 1), ("member2", 2)]
        await schedule(store, "default", name, decision.clusters)
        work_name = keys.work_name("default", "flink-divided", FLINK[1])
        await works_.until(lambda: all(work_in(works_, c, work_name) is not None for c in ("member1", "member2")))
        # Karmada's FlinkDeployment has no replicaRevision: each cluster runs the object as written,
        # as in Karmada (ReviseReplica is what would give a cluster its share).
        for cluster in ("member1", "member2"):
            assert manifest(work_in(works_, cluster, work_name))["spec"]["taskManager"]["replicas"] == 2

        # statusAggregation: the template's status is AggregateStatus' (the last member's, by
        # Karmada's script), not Flotilla's native rule (which has none for this kind).
        await report_flink(store, "member1", work_name, {"lifecycleState": "DEPLOYED", "observedGeneration": 1})
        await report_flink(store, "member2", work_name, {"lifecycleState": "STABLE", "observedGeneration": 1,
                                                         "jobStatus": {"state": "RUNNING"}})
        flink = registry.for_kind(*FLINK)
        async with watching(store, flink) as templates:
            def aggregated() -> bool:
                status = json.loads(templates.informer.get("default/flink-divided").content).get("status", {})
                return status.get("lifecycleState") == "STABLE" and status.get("jobStatus") == {"state": "RUNNING"}

            await templates.until(aggregated)


async def test_with_multiple_pod_templates_a_flink_deployment_goes_whole_to_one_cluster_that_fits(
        store: ObjectStore) -> None:
    """MultiplePodTemplatesScheduling (alpha, off by default as in Karmada): the binding holds
    GetComponents' answer, and the scheduler places one whole set on a cluster that can hold it."""
    customization, template, policy = (codec.from_dict(d) for d in codec.load_yaml_documents(
        (EXAMPLES_DIR / "flink-customization.yaml").read_text()))
    # One cluster (static weights would set spread constraints aside, as in Karmada).
    policy.spec.placement.spread_constraints.add(spread_by_field="cluster", min_groups=1, max_groups=1)
    policy.spec.placement.replica_scheduling.replica_division_preference = "Aggregated"
    policy.spec.placement.replica_scheduling.ClearField("weight_preference")
    for obj in (customization, template, claimed(policy)):
        await store.create(obj)
    name = "flink-divided-flinkdeployment"
    async with (running(store, {"MultiplePodTemplatesScheduling": True}),
                watching(store, registry.RESOURCE_BINDING) as bindings):
        await bindings.until(lambda: bindings.informer.get(f"default/{name}") is not None)
        binding = bindings.informer.get(f"default/{name}")
    # Components instead of replicas, as Karmada's detector writes them.
    assert binding.spec.replicas == 0 and not binding.spec.HasField("replica_requirements")
    assert [codec.to_dict(c) for c in binding.spec.components] == [
        {"name": "jobmanager", "replicas": 1,
         "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "2048m"}}},
        {"name": "taskmanager", "replicas": 2,
         "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "2048m"}}}]

    # One set needs 3 CPUs: member1 (2 free) cannot hold it, member2 can.
    snapshot = core.Snapshot.of([member("member1", cpu="2"), member("member2")], datetime.now(UTC))
    framework = Framework.build("*", installed={})
    decision = core.schedule(binding, snapshot, framework, multiple_pod_templates=True)
    assert decision.ok, decision.message
    assert decision.clusters == [("member2", 0)]
    assert decision.components == (("jobmanager", 1), ("taskmanager", 2))
    # Without the gate the scheduler knows no sets: the first cluster takes it, room or not.
    assert core.schedule(binding, snapshot, framework).clusters == [("member1", 0)]
    # No cluster with room for a set: unschedulable, and the binding stays where it is.
    full = core.Snapshot.of([member("member1", cpu="2"), member("member2", cpu="2")], datetime.now(UTC))
    refused = core.schedule(binding, full, framework, multiple_pod_templates=True)
    assert refused.outcome is core.Outcome.UNSCHEDULABLE and refused.clusters is None


async def test_without_the_gate_components_are_not_read(store: ObjectStore) -> None:
    customization, template, policy = (codec.from_dict(d) for d in codec.load_yaml_documents(
        (EXAMPLES_DIR / "flink-customization.yaml").read_text()))
    for obj in (customization, template, claimed(policy)):
        await store.create(obj)
    name = "flink-divided-flinkdeployment"
    async with running(store), watching(store, registry.RESOURCE_BINDING) as bindings:
        await bindings.until(lambda: bindings.informer.get(f"default/{name}") is not None)
        binding = bindings.informer.get(f"default/{name}")
    assert binding.spec.replicas == 3 and not binding.spec.components


async def report_flink(store: ObjectStore, cluster: str, work_name: str, status: dict[str, Any],
                       identity: tuple[str, str, str, str] = ("flink.apache.org", "v1beta1", FLINK[1],
                                                             "flink-divided")) -> None:
    """What the execution side records once the member runs the object."""
    group, version, kind, name = identity

    def change(work: work_pb2.Work) -> None:
        set_condition(work.status.conditions, "Applied", "True", "AppliedSuccessful", "applied", RealClock().now(),
                      work.metadata.generation)
        del work.status.manifest_statuses[:]
        work.status.manifest_statuses.add(
            identifier=work_pb2.ResourceIdentifier(ordinal=0, group=group, version=version, kind=kind,
                                                   namespace="default", name=name),
            status=codec.raw_json(status), health="Healthy")

    await store.mutate(registry.WORK, keys.execution_namespace(cluster), work_name, change, status=True)


def widget_customization(replicas: str, revision: str = "", aggregation: str = "", dependencies: str = "") -> Any:
    rules: dict[str, Any] = {"replicaResource": {"luaScript": f"function GetReplicas(obj)\n  {replicas}\nend"}}
    if dependencies:
        rules["dependencyInterpretation"] = {"luaScript": f"function GetDependencies(obj)\n  {dependencies}\nend"}
    if aggregation:
        rules["statusAggregation"] = {"luaScript": f"function AggregateStatus(obj, items)\n  {aggregation}\nend"}
    if revision:
        rules["replicaRevision"] = {"luaScript": f"function ReviseReplica(obj, desired)\n  {revision}\nend"}
    return codec.from_dict({
        "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "widgets"},
        "spec": {"target": {"apiVersion": "example.io/v1", "kind": "Widget"}, "customizations": rules}})


def widget(size: int) -> Any:
    return codec.from_dict({"apiVersion": "example.io/v1", "kind": "Widget",
                            "metadata": {"name": "w", "namespace": "default", "uid": "u-1"},
                            "spec": {"size": size, "colour": "blue"}})


def widget_policy() -> Any:
    return claimed(codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "widgets", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": "example.io/v1", "kind": "Widget"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                               "replicaScheduling": {"replicaSchedulingType": "Divided"}}}}))


def resize(size: int) -> Any:
    def change(obj: Any) -> None:
        content = json.loads(obj.content)
        content["spec"]["size"] = size
        obj.content = codec.raw_json(content)
    return change


async def test_revise_replica_gives_each_cluster_its_share(store: ObjectStore) -> None:
    await store.create(widget_customization("return obj.spec.size, {resourceRequest = {cpu = 0.25}}",
                                            "obj.spec.size = desired\n  return obj"))
    await store.create(widget(4))
    await store.create(widget_policy())
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/w-widget") is not None)
        binding = bindings.informer.get("default/w-widget")
        assert binding.spec.replicas == 4
        assert dict(binding.spec.replica_requirements.resource_request) == {"cpu": "250m"}
        await schedule(store, "default", "w-widget", [("member1", 1), ("member2", 3)])
        await works_.until(lambda: all(work_in(works_, c, WIDGET_WORK) is not None for c in ("member1", "member2")))
        for cluster, share in (("member1", 1), ("member2", 3)):
            body = manifest(work_in(works_, cluster, WIDGET_WORK))
            assert body["spec"] == {"size": share, "colour": "blue"}
            assert body["metadata"]["name"] == "w" and "uid" not in body["metadata"]


async def test_a_failing_get_replicas_keeps_the_previous_replicas_with_an_event(store: ObjectStore) -> None:
    await store.create(widget_customization("return obj.spec.size"))
    await store.create(widget(4))
    await store.create(widget_policy())
    async with running(store), watching(store, registry.RESOURCE_BINDING) as bindings:
        await bindings.until(lambda: bindings.informer.get("default/w-widget") is not None)
        assert bindings.informer.get("default/w-widget").spec.replicas == 4

        def broken(ric: Any) -> None:
            ric.spec.customizations.replica_resource.lua_script = (
                "function GetReplicas(obj)\n  error('cannot count widgets')\nend")

        await store.mutate(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, "", "widgets", broken)
        await store.mutate(WIDGET, "default", "w", resize(6))
        for _ in range(100):
            if await warnings(store, "InterpretReplicaFailed"):
                break
            await asyncio.sleep(0.05)
        (event,) = await warnings(store, "InterpretReplicaFailed")
        assert event.involved_object.kind == "Widget" and event.type == "Warning"
        assert "cannot count widgets" in event.message and "widgets" in event.message
        # Never 0, never a guess: what it had.
        assert bindings.informer.get("default/w-widget").spec.replicas == 4

        # Fixed, the binding follows the template again.
        def fixed(ric: Any) -> None:
            ric.spec.customizations.replica_resource.lua_script = (
                "function GetReplicas(obj)\n  return obj.spec.size\nend")

        await store.mutate(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, "", "widgets", fixed)
        await bindings.until(lambda: bindings.informer.get("default/w-widget").spec.replicas == 6)


async def test_a_failing_revise_replica_leaves_every_work_as_it_is(store: ObjectStore) -> None:
    await store.create(widget_customization("return obj.spec.size", "obj.spec.size = desired\n  return obj"))
    await store.create(widget(4))
    await store.create(widget_policy())
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/w-widget") is not None)
        await schedule(store, "default", "w-widget", [("member1", 2), ("member2", 2)])
        await works_.until(lambda: all(work_in(works_, c, WIDGET_WORK) is not None for c in ("member1", "member2")))

        def broken(ric: Any) -> None:
            ric.spec.customizations.replica_revision.lua_script = (
                "function ReviseReplica(obj, desired)\n  return 'half'\nend")

        await store.mutate(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, "", "widgets", broken)
        await schedule(store, "default", "w-widget", [("member1", 1), ("member2", 3)])
        for _ in range(100):
            if await warnings(store, "ReviseReplicaFailed"):
                break
            await asyncio.sleep(0.05)
        # On the binding and on the template, as Karmada records the binding controller's events.
        events = await warnings(store, "ReviseReplicaFailed")
        assert {e.involved_object.kind for e in events} == {"ResourceBinding", "Widget"}
        assert all("ReviseReplica returned a string, not an object" in e.message for e in events)
        for cluster in ("member1", "member2"):
            assert manifest(work_in(works_, cluster, WIDGET_WORK))["spec"]["size"] == 2


async def test_a_failing_aggregate_status_leaves_the_template_status_with_an_event(store: ObjectStore) -> None:
    await store.create(widget_customization("return obj.spec.size", aggregation="error('cannot add widgets')"))
    await store.create(widget(4))
    await store.create(widget_policy())
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/w-widget") is not None)
        await schedule(store, "default", "w-widget", [("member1", 2), ("member2", 2)])
        await works_.until(lambda: all(work_in(works_, c, WIDGET_WORK) is not None for c in ("member1", "member2")))
        for cluster in ("member1", "member2"):
            await report_flink(store, cluster, WIDGET_WORK, {"ready": 2}, ("example.io", "v1", "Widget", "w"))
        await bindings.until(lambda: len(bindings.informer.get("default/w-widget").status.aggregated_status) == 2)
        for _ in range(100):
            if await warnings(store, "AggregateStatusFailed"):
                break
            await asyncio.sleep(0.05)
        (event,) = await warnings(store, "AggregateStatusFailed")
        assert event.involved_object.kind == "Widget" and "cannot add widgets" in event.message
        assert "status" not in json.loads((await store.get(WIDGET, "default", "w")).content)


def config_map(name: str) -> Any:
    return codec.from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
                            "data": {"a": "b"}})


async def test_get_dependencies_sends_what_the_script_names_and_a_failure_detaches_nothing(
        store: ObjectStore) -> None:
    customization = widget_customization(
        "return obj.spec.size",
        dependencies="return {{apiVersion = 'v1', kind = 'ConfigMap', name = obj.spec.config}}")
    await store.create(customization)
    template = widget(2)
    content = json.loads(template.content)
    content["spec"]["config"] = "widget-config"
    template.content = codec.raw_json(content)
    await store.create(template)
    policy = widget_policy()
    policy.spec.propagate_deps = True
    await store.create(policy)
    await store.create(config_map("widget-config"))
    attached_name = "default/widget-config-configmap"
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/w-widget") is not None)
        await schedule(store, "default", "w-widget", [("member1", 1), ("member2", 1)])

        def required() -> list[tuple[str, list[str]]]:
            attached = bindings.informer.get(attached_name)
            return [] if attached is None else [(s.name, [c.name for c in s.clusters])
                                                for s in attached.spec.required_by]

        await bindings.until(lambda: required() == [("w-widget", ["member1", "member2"])])
        work_name = keys.work_name("default", "widget-config", "ConfigMap")
        await works_.until(lambda: all(work_in(works_, c, work_name) is not None for c in ("member1", "member2")))

        def broken(ric: Any) -> None:
            ric.spec.customizations.dependency_interpretation.lua_script = (
                "function GetDependencies(obj)\n  return 'widget-config'\nend")

        await store.mutate(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, "", "widgets", broken)
        for _ in range(100):
            if await warnings(store, "GetDependenciesFailed"):
                break
            await asyncio.sleep(0.05)
        (event,) = await warnings(store, "GetDependenciesFailed")
        assert event.involved_object.kind == "Widget" and "not a list of dependencies" in event.message
        # The dependent stays attached, and on both members.
        assert required() == [("w-widget", ["member1", "member2"])]
        assert all(not work_in(works_, c, work_name).metadata.HasField("deletion_timestamp")
                   for c in ("member1", "member2"))


async def test_an_unreadable_customization_holds_bindings_of_kinds_without_a_native_rule(store: ObjectStore) -> None:
    policies = Informer(store, registry.PROPAGATION_POLICY)
    cluster_policies = Informer(store, registry.CLUSTER_PROPAGATION_POLICY)
    for informer in (policies, cluster_policies):
        informer.add_indexer(SELECTOR_INDEX, policy_match.selector_index)
    await store.create(widget(4))
    await store.create(widget_policy())
    async with in_background(policies.run()), in_background(cluster_policies.run()):
        await policies.wait_synced()
        await cluster_policies.wait_synced()
        reconciler = TemplateReconciler(store, RealClock(), policies, cluster_policies,
                                        events=EventRecorder(store, "executor"),
                                        interpreter=CustomizedInterpreter(), unreadable=lambda: ["widgets"])
        with pytest.raises(ReplicasNotInterpreted, match="ResourceInterpreterCustomization widgets cannot be read"):
            await reconciler.reconcile(template_key("example.io/v1", "Widget", "default", "w"))
        assert await store.try_get(registry.RESOURCE_BINDING, "default", "w-widget") is None
        (event,) = await warnings(store, "InterpretReplicaFailed")
        assert event.involved_object.kind == "Widget"
