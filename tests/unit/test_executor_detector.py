"""The detector's rules on bindings: what a policy update may change, claims taken off,
replaced templates, template keys, and which template changes matter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.rules.binding_builder import build_binding
from services.executor.detector import (
    binds,
    merge_binding,
    owner_replaced,
    parse_template_key,
    template_key,
    unclaimed,
)
from services.executor.routing import specification_changed
from tests.factories import EXAMPLES_DIR


def seed() -> tuple[Any, Any]:
    template, policy = (codec.from_dict(d) for d in
                        codec.load_yaml_documents((EXAMPLES_DIR / "nginx-divided.yaml").read_text()))
    template.metadata.uid = "tmpl-uid"
    policy.metadata.labels["propagationpolicy.karmada.io/permanent-id"] = "pp-id"
    return template, policy


def scheduled_binding() -> Any:
    template, policy = seed()
    binding = build_binding(template, policy)
    binding.metadata.labels["resourcebinding.karmada.io/permanent-id"] = "rb-id"
    binding.metadata.labels["team"] = "a"
    binding.metadata.annotations["policy.karmada.io/applied-placement"] = "{}"
    binding.metadata.labels["clusterpropagationpolicy.karmada.io/permanent-id"] = "stale-cpp-id"
    binding.metadata.annotations["clusterpropagationpolicy.karmada.io/name"] = "stale"
    binding.spec.clusters.add(name="member1", replicas=1)
    binding.spec.graceful_eviction_tasks.add(from_cluster="member3", purge_mode="Gracefully")
    binding.spec.required_by.add(namespace="default", name="other")
    binding.spec.reschedule_triggered_at.FromSeconds(5)
    binding.spec.suspension.scheduling = True
    binding.status.aggregated_status.add(cluster_name="member1", applied=True)
    return binding


def test_merge_takes_the_policys_fields_and_keeps_everything_else() -> None:
    template, policy = seed()
    existing = scheduled_binding()
    content = json.loads(template.content)
    content["spec"]["replicas"] = 5
    template.content = codec.raw_json(content)
    policy.spec.placement.cluster_affinity.cluster_names.append("member3")
    policy.spec.failover.cluster.purge_mode = "Directly"
    policy.spec.suspension.dispatching = True
    policy.spec.preserve_resources_on_deletion = True
    merged = merge_binding(existing, build_binding(template, policy))

    assert merged.spec.replicas == 5
    assert list(merged.spec.placement.cluster_affinity.cluster_names) == ["member1", "member2", "member3"]
    assert merged.spec.failover.cluster.purge_mode == "Directly"
    assert merged.spec.preserve_resources_on_deletion
    assert merged.spec.suspension.dispatching and merged.spec.suspension.scheduling
    # The scheduler's, the taint manager's and the distributor's fields, and the identity, stay.
    assert [(t.name, t.replicas) for t in merged.spec.clusters] == [("member1", 1)]
    assert [t.from_cluster for t in merged.spec.graceful_eviction_tasks] == ["member3"]
    assert [r.name for r in merged.spec.required_by] == ["other"]
    assert merged.spec.reschedule_triggered_at.seconds == 5
    assert merged.status == existing.status
    assert merged.metadata.labels["resourcebinding.karmada.io/permanent-id"] == "rb-id"
    assert merged.metadata.labels["team"] == "a"
    assert merged.metadata.annotations["policy.karmada.io/applied-placement"] == "{}"
    # Only one policy claims a binding.
    assert "clusterpropagationpolicy.karmada.io/permanent-id" not in merged.metadata.labels
    assert "clusterpropagationpolicy.karmada.io/name" not in merged.metadata.annotations
    assert merged.metadata.labels["propagationpolicy.karmada.io/permanent-id"] == "pp-id"


def test_merge_of_an_unchanged_policy_changes_nothing() -> None:
    template, policy = seed()
    existing = scheduled_binding()
    del existing.metadata.labels["clusterpropagationpolicy.karmada.io/permanent-id"]
    del existing.metadata.annotations["clusterpropagationpolicy.karmada.io/name"]
    assert merge_binding(existing, build_binding(template, policy)) == existing


def test_merge_clears_what_the_policy_no_longer_sets() -> None:
    template, policy = seed()
    policy.spec.failover.cluster.purge_mode = "Directly"
    policy.spec.preserve_resources_on_deletion = True
    existing = merge_binding(scheduled_binding(), build_binding(template, policy))
    policy.spec.ClearField("failover")
    policy.spec.ClearField("preserve_resources_on_deletion")
    merged = merge_binding(existing, build_binding(template, policy))
    assert not merged.spec.HasField("failover")
    assert not merged.spec.HasField("preserve_resources_on_deletion")


def test_unclaimed_takes_off_every_claim_only() -> None:
    binding = scheduled_binding()
    result = unclaimed(binding)
    assert {k for k in result.metadata.labels if "propagationpolicy" in k} == set()
    assert {k for k in result.metadata.annotations if "propagationpolicy" in k} == set()
    assert result.metadata.labels["resourcebinding.karmada.io/permanent-id"] == "rb-id"
    assert result.spec == binding.spec


def test_owner_replaced_and_binds() -> None:
    template, policy = seed()
    binding = build_binding(template, policy)
    assert binds(binding, "Deployment", "default", "nginx")
    assert not binds(binding, "Deployment", "default", "other")
    assert not owner_replaced(binding, template)
    template.metadata.uid = "new-uid"
    assert owner_replaced(binding, template)
    del binding.metadata.owner_references[:]
    assert not owner_replaced(binding, template)


@pytest.mark.parametrize("args", [
    ("apps/v1", "Deployment", "default", "nginx"),
    ("v1", "ConfigMap", "default", "conf"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:controller:reader"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "kube-system", "system:x"),
])
def test_template_keys_round_trip(args: tuple[str, str, str, str]) -> None:
    assert parse_template_key(template_key(*args)) == args


def test_only_specification_changes_matter() -> None:
    template, _ = seed()
    same = type(template)()
    same.CopyFrom(template)
    content = json.loads(same.content)
    content["status"] = {"readyReplicas": 3}
    same.content = codec.raw_json(content)
    same.metadata.resource_version = "99"
    assert not specification_changed(template, same)
    same.metadata.labels["tier"] = "web"
    assert specification_changed(template, same)
    content["spec"]["replicas"] = 4
    other = type(template)()
    other.CopyFrom(template)
    other.content = codec.raw_json(content)
    # As the store writes it: content other than status changed, so the generation too.
    other.metadata.generation = template.metadata.generation + 1
    assert specification_changed(template, other)
    # A new generation whose content (status aside) is the same is no change either.
    content["spec"]["replicas"] = json.loads(template.content)["spec"]["replicas"]
    other.content = codec.raw_json(content)
    assert not specification_changed(template, other)
