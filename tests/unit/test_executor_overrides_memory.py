"""Override policies reach the Works the executor builds (on a MemoryStore): each cluster's Work
carries that cluster's overrides and Karmada's applied-overrides annotations, a policy edit
rewrites the Works, and the Work a failover creates on the new cluster carries the new
cluster's image (the outage of issue 36: the failed-over copy pulling the old registry)."""

from __future__ import annotations

import json
from typing import Any

from flotilla.api import codec, registry
from flotilla.api.v1 import work_pb2
from flotilla.rules.overrides import APPLIED_CLUSTER_OVERRIDES_ANNOTATION, APPLIED_OVERRIDES_ANNOTATION
from flotilla.store import ObjectStore
from tests.factories import make_cluster
from tests.unit.test_executor_binding_flow_memory import manifest, running, schedule, seed, watching, work_in

BINDING = "nginx-deployment"


def override_policy(member1_registry: str = "registry.member1.example") -> Any:
    return codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": "nginx-op", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "overrideRules": [
                {"targetCluster": {"clusterNames": ["member1"]}, "overriders": {
                    "imageOverrider": [{"component": "Registry", "operator": "replace",
                                        "value": member1_registry}],
                    "labelsOverrider": [{"operator": "add", "value": {"env": "member1"}}]}},
                {"targetCluster": {"labelSelector": {"matchLabels": {"region": "two"}}}, "overriders": {
                    "imageOverrider": [{"component": "Registry", "operator": "replace",
                                        "value": "registry.member2.example"}],
                    "annotationsOverrider": [{"operator": "add", "value": {"env": "member2"}}]}},
            ]}})


def cluster_override_policy() -> Any:
    return codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
        "metadata": {"name": "fleet"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                 "overrideRules": [{"overriders": {"labelsOverrider": [
                     {"operator": "add", "value": {"fleet": "yes", "env": "fleet"}}]}}]}})


def image(work: work_pb2.Work | None) -> str | None:
    if work is None:
        return None
    return str(manifest(work)["spec"]["template"]["spec"]["containers"][0]["image"])


async def test_each_cluster_its_overrides_edits_rewrite_and_failover_gets_the_new_clusters(
        store: ObjectStore) -> None:
    template, policy = seed()
    for obj in (make_cluster("member1"), make_cluster("member2", region="two"), template, policy,
                override_policy(), cluster_override_policy()):
        await store.create(obj)
    async with (running(store), watching(store, registry.WORK) as works_,
                watching(store, registry.RESOURCE_BINDING) as bindings):
        await bindings.until(lambda: bindings.informer.get(f"default/{BINDING}") is not None)
        await schedule(store, "default", BINDING, [("member1", 1), ("member2", 2)])
        await works_.until(lambda: image(work_in(works_, "member1")) == "registry.member1.example/nginx"
                           and image(work_in(works_, "member2")) == "registry.member2.example/nginx")
        w1, w2 = work_in(works_, "member1"), work_in(works_, "member2")
        assert w1 is not None and w2 is not None
        m1, m2 = manifest(w1)["metadata"], manifest(w2)["metadata"]
        # The ClusterOverridePolicy applies first; the namespace's own policy has the last word.
        assert m1["labels"]["env"] == "member1" and m1["labels"]["fleet"] == "yes"
        assert m2["labels"]["env"] == "fleet" and m2["annotations"]["env"] == "member2"
        assert "env" not in m1.get("annotations", {})
        applied = json.loads(w1.metadata.annotations[APPLIED_OVERRIDES_ANNOTATION])
        assert [item["policyName"] for item in applied] == ["nginx-op"]
        assert applied[0]["overriders"]["imageOverrider"][0]["value"] == "registry.member1.example"
        assert json.loads(w2.metadata.annotations[APPLIED_CLUSTER_OVERRIDES_ANNOTATION])[0]["policyName"] == "fleet"

        # Editing the policy rewrites the Works it changes.
        def edit(op: Any) -> None:
            op.spec.override_rules[0].overriders.image_overrider[0].value = "registry.member1.new"

        await store.mutate(registry.OVERRIDE_POLICY, "default", "nginx-op", edit)
        await works_.until(lambda: image(work_in(works_, "member1")) == "registry.member1.new/nginx")

        # Deleting the ClusterOverridePolicy takes its label and its record away.
        await store.delete(registry.CLUSTER_OVERRIDE_POLICY, "", "fleet")

        def fleet_gone() -> bool:
            work = work_in(works_, "member2")
            return (work is not None and "fleet" not in manifest(work)["metadata"]["labels"]
                    and APPLIED_CLUSTER_OVERRIDES_ANNOTATION not in work.metadata.annotations)

        await works_.until(fleet_gone)

        # member2's share moves to a new cluster, member3, matched by the rule's label selector:
        # its copy is built fresh, with that rule's image and annotation.
        await store.create(make_cluster("member3", region="two"))
        await schedule(store, "default", BINDING, [("member1", 1), ("member3", 2)])
        await works_.until(lambda: image(work_in(works_, "member3")) == "registry.member2.example/nginx")
        w3 = work_in(works_, "member3")
        assert w3 is not None and manifest(w3)["metadata"]["annotations"]["env"] == "member2"

        # member3 leaves region two: the rule no longer targets it, and its Work follows at once.
        def relabel(cluster: Any) -> None:
            cluster.metadata.labels["region"] = "three"

        await store.mutate(registry.CLUSTER, "", "member3", relabel)
        await works_.until(lambda: image(work_in(works_, "member3")) == "nginx")
        w3 = work_in(works_, "member3")
        assert w3 is not None and APPLIED_OVERRIDES_ANNOTATION not in w3.metadata.annotations


async def test_failover_copy_runs_the_new_clusters_image(store: ObjectStore) -> None:
    """The binding moves from member1 to member2 (what the scheduler writes after member1 fails):
    the Work created on member2 pulls from member2's registry."""
    template, policy = seed()
    for obj in (make_cluster("member1"), make_cluster("member2", region="two"), template, policy,
                override_policy()):
        await store.create(obj)
    async with (running(store), watching(store, registry.WORK) as works_,
                watching(store, registry.RESOURCE_BINDING) as bindings):
        await bindings.until(lambda: bindings.informer.get(f"default/{BINDING}") is not None)
        await schedule(store, "default", BINDING, [("member1", 3)])
        await works_.until(lambda: image(work_in(works_, "member1")) == "registry.member1.example/nginx")
        await schedule(store, "default", BINDING, [("member2", 3)])
        await works_.until(lambda: image(work_in(works_, "member2")) == "registry.member2.example/nginx")
        w2 = work_in(works_, "member2")
        assert w2 is not None
        assert manifest(w2)["metadata"]["labels"].get("env") is None
        assert json.loads(w2.metadata.annotations[APPLIED_OVERRIDES_ANNOTATION])[0]["policyName"] == "nginx-op"


async def test_an_override_that_cannot_apply_keeps_the_clusters_work_and_others_proceed(
        store: ObjectStore) -> None:
    template, policy = seed()
    broken = codec.from_dict({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": "broken", "namespace": "default"},
        "spec": {"overrideRules": [{"targetCluster": {"clusterNames": ["member1"]}, "overriders": {
            "plaintext": [{"path": "/spec/nothing/here", "operator": "replace", "value": 1}]}}]}})
    for obj in (make_cluster("member1"), make_cluster("member2"), template, policy, broken):
        await store.create(obj)
    async with (running(store), watching(store, registry.WORK) as works_,
                watching(store, registry.RESOURCE_BINDING) as bindings):
        await bindings.until(lambda: bindings.informer.get(f"default/{BINDING}") is not None)
        await schedule(store, "default", BINDING, [("member1", 1), ("member2", 2)])
        await works_.until(lambda: work_in(works_, "member2") is not None)
        assert work_in(works_, "member1") is None
        # Fixing the policy routes the binding again: member1 gets its Work.
        await store.delete(registry.OVERRIDE_POLICY, "default", "broken")
        await works_.until(lambda: work_in(works_, "member1") is not None)
