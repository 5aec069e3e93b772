"""The executor's control-plane side on a MemoryStore: the seed Deployment and policy become a
binding, the binding becomes Works, Work statuses become the binding's and the template's
status; graceful and Directly eviction tasks; templates and policies going away.
(The executor on a real etcd: tests/integration/test_executor_execution.py and
test_executor_rollout_restart.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from flotilla.aio.clock import Clock, FakeClock, RealClock
from flotilla.api import codec, keys, registry
from flotilla.api.conditions import get_condition, set_condition
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import DIRECTLY_PURGE_PENDING_CONDITION
from flotilla.store import ObjectStore
from flotilla.store.informer import Informer
from services.executor.binding_controller import DIRECTLY_REQUEUE_SECONDS
from services.executor.controllers import ExecutorConfig, ExecutorControllers
from services.executor.works import DIRECTLY_PURGE_ANNOTATION
from tests.background import in_background
from tests.factories import EXAMPLES_DIR, make_cluster
from tests.watching import Watch

POLICY_ID = "2f1c0c1e-5d7e-4d6e-9a51-6b1f3d0c9a77"
DEPLOYMENT = registry.for_kind("apps/v1", "Deployment")
WORK_NAME = keys.work_name("default", "nginx", "Deployment")


def seed() -> tuple[Any, Any]:
    documents: list[Any] = [codec.from_dict(d) for d in
                            codec.load_yaml_documents((EXAMPLES_DIR / "nginx-divided.yaml").read_text())]
    template, policy = documents
    # As admission stamps it.
    policy.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = POLICY_ID
    return template, policy


@contextlib.asynccontextmanager
async def running(store: ObjectStore, clock: Clock | None = None,
                  config: ExecutorConfig | None = None) -> AsyncIterator[ExecutorControllers]:
    controllers = ExecutorControllers(store, clock or RealClock(), config)
    async with in_background(controllers.run()):
        yield controllers


@contextlib.asynccontextmanager
async def watching(store: ObjectStore, rt: registry.ResourceType[Any]) -> AsyncIterator[Watch]:
    informer = Informer(store, rt)
    watch = Watch(informer)
    async with in_background(informer.run()):
        await informer.wait_synced()
        yield watch


def manifest(work: work_pb2.Work) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(work.spec.workload.manifests[0])
    return body


def work_in(watch: Watch, cluster: str, name: str = WORK_NAME) -> work_pb2.Work | None:
    return watch.informer.get(f"{keys.execution_namespace(cluster)}/{name}")


async def schedule(store: ObjectStore, namespace: str, name: str, clusters: list[tuple[str, int]],
                   rt: registry.ResourceType[Any] = registry.RESOURCE_BINDING) -> None:
    """What the scheduler writes: spec.clusters, then lastScheduledTime."""

    def place(binding: Any) -> None:
        del binding.spec.clusters[:]
        for cluster, replicas in clusters:
            binding.spec.clusters.add(name=cluster, replicas=replicas)

    def observed(binding: Any) -> None:
        binding.status.last_scheduled_time.FromSeconds(int(RealClock().now().timestamp()))
        binding.status.scheduler_observed_generation = binding.metadata.generation

    await store.mutate(rt, namespace, name, place)
    await store.mutate(rt, namespace, name, observed, status=True)


async def report(store: ObjectStore, cluster: str, status: dict[str, Any], health: str = "Healthy",
                 name: str = WORK_NAME) -> None:
    """What the execution controller writes once the member runs the Deployment."""

    def change(work: work_pb2.Work) -> None:
        set_condition(work.status.conditions, "Applied", "True", "AppliedSuccessful",
                      "Manifest has been successfully applied", RealClock().now(), work.metadata.generation)
        del work.status.manifest_statuses[:]
        work.status.manifest_statuses.add(
            identifier=work_pb2.ResourceIdentifier(ordinal=0, group="apps", version="v1", kind="Deployment",
                                                   namespace="default", name="nginx"),
            status=codec.raw_json(status), health=health)

    await store.mutate(registry.WORK, keys.execution_namespace(cluster), name, change, status=True)


def deployment_status(replicas: int) -> dict[str, Any]:
    return {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas}


async def release(store: ObjectStore, cluster: str, name: str = WORK_NAME) -> None:
    """The execution controller letting a deleted Work go."""

    def drop(work: work_pb2.Work) -> None:
        work.metadata.finalizers.remove("karmada.io/execution-controller")

    await store.mutate(registry.WORK, keys.execution_namespace(cluster), name, drop)


async def test_seed_deployment_to_works_and_status_back(store: ObjectStore) -> None:
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_, watching(store, DEPLOYMENT) as templates):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        binding = bindings.informer.get("default/nginx-deployment")
        assert binding.spec.replicas == 3
        assert binding.spec.placement == policy.spec.placement
        assert binding.spec.resource.kind == "Deployment" and binding.spec.resource.name == "nginx"
        assert dict(binding.spec.replica_requirements.resource_request) == {"cpu": "100m", "memory": "128Mi"}
        labels, annotations = binding.metadata.labels, binding.metadata.annotations
        assert labels["propagationpolicy.karmada.io/permanent-id"] == POLICY_ID
        binding_id = labels["resourcebinding.karmada.io/permanent-id"]
        assert binding_id
        assert annotations["propagationpolicy.karmada.io/name"] == "nginx-propagation"
        assert annotations["propagationpolicy.karmada.io/namespace"] == "default"
        assert list(binding.metadata.finalizers) == ["karmada.io/binding-controller"]
        assert [(o.kind, o.name, o.controller) for o in binding.metadata.owner_references] == [
            ("Deployment", "nginx", True)]

        await schedule(store, "default", "nginx-deployment", [("member1", 1), ("member2", 2)])
        await works_.until(lambda: all(work_in(works_, c) is not None for c in ("member1", "member2")))
        for cluster, replicas in (("member1", 1), ("member2", 2)):
            work = work_in(works_, cluster)
            body = manifest(work)
            assert body["spec"]["replicas"] == replicas
            assert "status" not in body and "uid" not in body["metadata"]
            assert body["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"] == binding_id
            assert work.metadata.labels["resourcebinding.karmada.io/permanent-id"] == binding_id
            assert work.metadata.labels["work.karmada.io/permanent-id"]
            assert work.metadata.annotations["resourcebinding.karmada.io/name"] == "nginx-deployment"
            assert work.metadata.annotations["resourcetemplate.karmada.io/generation"] == "1"
            assert list(work.metadata.finalizers) == ["karmada.io/execution-controller"]

        await report(store, "member1", deployment_status(1))
        await report(store, "member2", deployment_status(2))

        def aggregated() -> bool:
            b = bindings.informer.get("default/nginx-deployment")
            condition = get_condition(b.status.conditions, "FullyApplied")
            return (condition is not None and condition.status == "True"
                    and [(i.cluster_name, i.applied, i.health) for i in b.status.aggregated_status]
                    == [("member1", True, "Healthy"), ("member2", True, "Healthy")])

        await bindings.until(aggregated)

        def template_ready() -> bool:
            status = json.loads(templates.informer.get("default/nginx").content).get("status", {})
            return status == {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                              "availableReplicas": 3}

        await templates.until(template_ready)

        # A policy change reaches the binding, and leaves the scheduler's result and identity alone.
        def weights(p: Any) -> None:
            p.spec.placement.replica_scheduling.weight_preference.static_weight_list[1].weight = 3

        await store.mutate(registry.PROPAGATION_POLICY, "default", "nginx-propagation", weights)
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment").spec.placement
                             .replica_scheduling.weight_preference.static_weight_list[1].weight == 3)
        binding = bindings.informer.get("default/nginx-deployment")
        assert [(t.name, t.replicas) for t in binding.spec.clusters] == [("member1", 1), ("member2", 2)]
        assert binding.metadata.labels["resourcebinding.karmada.io/permanent-id"] == binding_id

        # A new template generation re-renders the Works.
        def scale(t: Any) -> None:
            content = json.loads(t.content)
            content["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
            t.content = codec.raw_json(content)

        await store.mutate(DEPLOYMENT, "default", "nginx", scale)
        await works_.until(lambda: all(
            manifest(work_in(works_, c))["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
            and work_in(works_, c).metadata.annotations["resourcetemplate.karmada.io/generation"] == "2"
            for c in ("member1", "member2")))


async def test_graceful_task_keeps_its_work_until_removed(store: ObjectStore) -> None:
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        await schedule(store, "default", "nginx-deployment", [("member1", 1), ("member2", 2)])
        await works_.until(lambda: work_in(works_, "member1") is not None and work_in(works_, "member2") is not None)

        def evict(binding: Any) -> None:
            del binding.spec.clusters[:]
            binding.spec.clusters.add(name="member2", replicas=3)
            binding.spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode="Gracefully", replicas=1,
                                                     reason="TaintUntolerated", producer="TaintManager")

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", evict)
        await works_.until(lambda: manifest(work_in(works_, "member2"))["spec"]["replicas"] == 3)
        kept = work_in(works_, "member1")
        assert kept is not None and not kept.metadata.HasField("deletion_timestamp")

        def drop_task(binding: Any) -> None:
            del binding.spec.graceful_eviction_tasks[:]

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", drop_task)
        await works_.until(lambda: work_in(works_, "member1").metadata.HasField("deletion_timestamp"))
        await release(store, "member1")
        await works_.until(lambda: work_in(works_, "member1") is None)
        assert work_in(works_, "member2") is not None


def pending(binding: Any) -> tuple[str, str, str] | None:
    condition = get_condition(binding.status.conditions, DIRECTLY_PURGE_PENDING_CONDITION)
    return (condition.status, condition.reason, condition.message) if condition is not None else None


async def test_directly_task_holds_new_works_until_the_old_one_is_gone(store: ObjectStore) -> None:
    clock = FakeClock(start=RealClock().now())
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    # member1 is dead: it cannot confirm the deletion of its Work.
    dead = make_cluster("member1")
    set_condition(dead.status.conditions, "Ready", "False", "ClusterNotReachable", "cluster is not reachable",
                  clock.now())
    await store.create(dead)
    key = "ResourceBinding:default/nginx-deployment"
    async with (running(store, clock) as controllers, watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        await schedule(store, "default", "nginx-deployment", [("member1", 3)])
        await works_.until(lambda: work_in(works_, "member1") is not None)

        def evict(binding: Any) -> None:
            del binding.spec.clusters[:]
            binding.spec.clusters.add(name="member3", replicas=3)
            binding.spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode="Directly", replicas=3,
                                                     reason="TaintUntolerated", producer="TaintManager")

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", evict)
        await works_.until(lambda: work_in(works_, "member1").metadata.HasField("deletion_timestamp"))
        assert work_in(works_, "member1").metadata.annotations[DIRECTLY_PURGE_ANNOTATION] == "true"
        # The binding says what it waits for, and why.
        await bindings.until(lambda: pending(bindings.informer.get("default/nginx-deployment")) is not None)
        status, reason, message = pending(bindings.informer.get("default/nginx-deployment"))
        assert (status, reason) == ("True", "ClusterNotReady")
        assert "member1" in message and "unjoin" in message
        # The pass that found the old Work requeued the binding only as a safety net (not a 5 s poll):
        # nothing is created however long the wait.
        async with asyncio.timeout(10):
            await clock.wait_for_sleepers(1)
        assert controllers.binding_controller.queue.num_requeues(key) == 0
        await clock.advance(DIRECTLY_REQUEUE_SECONDS)
        async with asyncio.timeout(10):
            await clock.wait_for_sleepers(1)
        assert (await store.try_get(registry.WORK, "karmada-es-member3", WORK_NAME)) is None

        # The task ages out while the old Work still waits for its cluster: the new Works still wait.
        def drop_task(binding: Any) -> None:
            del binding.spec.graceful_eviction_tasks[:]

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", drop_task)
        await bindings.until(lambda: not bindings.informer.get("default/nginx-deployment").spec
                             .graceful_eviction_tasks)
        async with asyncio.timeout(10):
            await clock.wait_for_sleepers(1)
        assert (await store.try_get(registry.WORK, "karmada-es-member3", WORK_NAME)) is None
        assert pending(bindings.informer.get("default/nginx-deployment"))[1] == "ClusterNotReady"

        # The Work goes (the cluster confirmed, or was unjoined): its deletion event, not the clock,
        # brings the binding back, the new Work is created and the condition goes.
        await release(store, "member1")
        await works_.until(lambda: work_in(works_, "member3") is not None)
        assert manifest(work_in(works_, "member3"))["spec"]["replicas"] == 3
        await bindings.until(lambda: pending(bindings.informer.get("default/nginx-deployment")) is None)


async def test_directly_purge_waiting_on_a_ready_cluster_says_the_member_is_deleting(store: ObjectStore) -> None:
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    ready = make_cluster("member1")
    set_condition(ready.status.conditions, "Ready", "True", "ClusterReady", "cluster is healthy and ready",
                  RealClock().now())
    await store.create(ready)
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        await schedule(store, "default", "nginx-deployment", [("member1", 3)])
        await works_.until(lambda: work_in(works_, "member1") is not None)

        def evict(binding: Any) -> None:
            del binding.spec.clusters[:]
            binding.spec.clusters.add(name="member2", replicas=3)
            binding.spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode="Immediately", replicas=3,
                                                     reason="ApplicationFailure", producer="ApplicationFailover")

        await store.mutate(registry.RESOURCE_BINDING, "default", "nginx-deployment", evict)
        await bindings.until(lambda: pending(bindings.informer.get("default/nginx-deployment")) is not None)
        status, reason, message = pending(bindings.informer.get("default/nginx-deployment"))
        assert (status, reason) == ("True", "WorkDeleting") and "member1" in message
        assert work_in(works_, "member2") is None
        await release(store, "member1")
        await works_.until(lambda: work_in(works_, "member2") is not None)
        await bindings.until(lambda: pending(bindings.informer.get("default/nginx-deployment")) is None)


async def test_template_gone_takes_its_binding_policy_gone_leaves_it_unclaimed(store: ObjectStore) -> None:
    template, policy = seed()
    other = codec.from_dict({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
                             "spec": {"replicas": 2}})
    await store.create(template)
    await store.create(other)
    policy.spec.resource_selectors.add(api_version="apps/v1", kind="Deployment", name="web")
    # As admission puts it there: the detector lets the policy go once it is deleted.
    policy.metadata.finalizers.append("karmada.io/propagation-policy-controller")
    await store.create(policy)
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.PROPAGATION_POLICY) as policies):
        await bindings.until(lambda: {"default/nginx-deployment", "default/web-deployment"}
                             <= set(bindings.informer.keys()))
        await schedule(store, "default", "web-deployment", [("member1", 2)])
        await store.delete(DEPLOYMENT, "default", "nginx")
        # Without Works, the binding controller lets it go at once.
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is None)

        await store.delete(registry.PROPAGATION_POLICY, "default", "nginx-propagation")
        await bindings.until(lambda: "propagationpolicy.karmada.io/permanent-id"
                             not in bindings.informer.get("default/web-deployment").metadata.labels)
        kept = bindings.informer.get("default/web-deployment")
        assert "propagationpolicy.karmada.io/name" not in kept.metadata.annotations
        await policies.until(lambda: policies.informer.get("default/nginx-propagation") is None)
        assert [(t.name, t.replicas) for t in kept.spec.clusters] == [("member1", 2)]

        # A new policy claims it again.
        policy.metadata.name = "web-propagation"
        policy.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = "another-id"
        policy.metadata.resource_version = ""
        del policy.metadata.finalizers[:]
        await store.create(policy)
        await bindings.until(lambda: bindings.informer.get("default/web-deployment").metadata.annotations
                             .get("propagationpolicy.karmada.io/name") == "web-propagation")


async def test_cluster_scoped_template_gets_a_cluster_resource_binding(store: ObjectStore) -> None:
    role = codec.from_dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": "system:reader"},
                            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    policy = codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "roles", "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "cpp-id"}},
        "spec": {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}},
    })
    await store.create(role)
    await store.create(policy)
    async with (running(store), watching(store, registry.CLUSTER_RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("system.reader-clusterrole") is not None)
        binding = bindings.informer.get("system.reader-clusterrole")
        assert binding.metadata.labels["clusterpropagationpolicy.karmada.io/permanent-id"] == "cpp-id"
        assert binding.metadata.annotations["clusterpropagationpolicy.karmada.io/name"] == "roles"
        assert binding.metadata.labels["clusterresourcebinding.karmada.io/permanent-id"]
        assert list(binding.metadata.finalizers) == ["karmada.io/cluster-resource-binding-controller"]
        await schedule(store, "", "system.reader-clusterrole", [("member1", 0)], registry.CLUSTER_RESOURCE_BINDING)
        name = keys.work_name("", "system:reader", "ClusterRole")
        await works_.until(lambda: work_in(works_, "member1", name) is not None)
        work = work_in(works_, "member1", name)
        assert work.metadata.annotations["clusterresourcebinding.karmada.io/name"] == "system.reader-clusterrole"
        assert manifest(work)["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]


async def test_dependencies_follow_the_workload(store: ObjectStore) -> None:
    template, policy = seed()
    content = json.loads(template.content)
    content["spec"]["template"]["spec"]["volumes"] = [{"name": "conf", "configMap": {"name": "nginx-conf"}}]
    template.content = codec.raw_json(content)
    policy.spec.propagate_deps = True
    config_map = codec.from_dict({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "nginx-conf", "namespace": "default"},
                                  "data": {"nginx.conf": "events {}"}})
    await store.create(template)
    await store.create(policy)
    async with (running(store), watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        await schedule(store, "default", "nginx-deployment", [("member1", 1), ("member2", 2)])
        # Created after its workload was scheduled: the dependency index brings it in.
        await store.create(config_map)
        await bindings.until(lambda: bindings.informer.get("default/nginx-conf-configmap") is not None)
        attached = bindings.informer.get("default/nginx-conf-configmap")
        assert [(s.namespace, s.name, [(c.name, c.replicas) for c in s.clusters])
                for s in attached.spec.required_by] == [
            ("default", "nginx-deployment", [("member1", 1), ("member2", 2)])]
        assert "propagationpolicy.karmada.io/permanent-id" not in attached.metadata.labels
        name = keys.work_name("default", "nginx-conf", "ConfigMap")
        await works_.until(lambda: all(work_in(works_, c, name) is not None for c in ("member1", "member2")))
        assert manifest(work_in(works_, "member1", name))["data"] == {"nginx.conf": "events {}"}

        await schedule(store, "default", "nginx-deployment", [("member2", 3)])
        await works_.until(lambda: work_in(works_, "member1", name).metadata.HasField("deletion_timestamp"))

        # No longer needed by anyone: the attached binding goes.
        await store.delete(DEPLOYMENT, "default", "nginx")
        await bindings.until(lambda: bindings.informer.get("default/nginx-conf-configmap") is None
                             or bindings.informer.get("default/nginx-conf-configmap").metadata
                             .HasField("deletion_timestamp"))



async def test_the_binding_controllers_own_work_writes_bring_it_no_pass(store: ObjectStore) -> None:
    template, policy = seed()
    await store.create(template)
    await store.create(policy)
    key = "ResourceBinding:default/nginx-deployment"
    async with (running(store) as controllers, watching(store, registry.RESOURCE_BINDING) as bindings,
                watching(store, registry.WORK) as works_):
        await bindings.until(lambda: bindings.informer.get("default/nginx-deployment") is not None)
        reconciler, queue = controllers.binding_reconciler, controllers.binding_controller.queue
        adds: list[str] = []
        passed = asyncio.Event()
        add, reconcile = queue.add, reconciler.reconcile

        def counting_add(k: str) -> None:
            adds.append(k)
            add(k)

        async def counting_reconcile(k: str) -> Any:
            try:
                return await reconcile(k)
            finally:
                if k == key and all(controllers.works.get(f"{keys.execution_namespace(c)}/{WORK_NAME}")
                                    for c in ("member1", "member2")):
                    passed.set()

        queue.add = counting_add  # type: ignore[method-assign]
        reconciler.reconcile = counting_reconcile  # type: ignore[method-assign]
        await schedule(store, "default", "nginx-deployment", [("member1", 1), ("member2", 2)])
        await asyncio.wait_for(passed.wait(), 15)
        # The schedule's change, and not the two Works that pass created.
        assert adds.count(key) == 1

        # A Work someone else changes is still this controller's to put back.
        def tamper(work: work_pb2.Work) -> None:
            work.spec.workload.manifests[0] = b'{"apiVersion":"apps/v1","kind":"Deployment"}'

        tampered = await store.mutate(registry.WORK, keys.execution_namespace("member1"), WORK_NAME, tamper)

        def put_back() -> bool:
            work = work_in(works_, "member1")
            return (work is not None and int(work.metadata.resource_version) > int(tampered.metadata.resource_version)
                    and manifest(work).get("metadata", {}).get("name") == "nginx")

        await works_.until(put_back)
        assert adds.count(key) == 2
