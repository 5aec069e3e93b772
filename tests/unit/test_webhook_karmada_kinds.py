"""Kinds of the karmada.io groups are never resource templates: one Flotilla does not build is
refused at admission, naming it; a policy may not select one; the detector never binds one."""

from __future__ import annotations

from typing import Any, cast

import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import keys, registry
from flotilla.api.v1 import meta_pb2
from flotilla.store import MemoryStore
from services.executor.detector import TemplateReconciler, template_key
from services.webhook.admission import DELETED, Admission, decode
from tests.admission_cases import DIVIDED, admit, parse_document

NOT_BUILT = [
    ("policy.karmada.io/v1alpha1", "FederatedResourceQuota"),
    ("remedy.karmada.io/v1alpha1", "Remedy"),
    ("config.karmada.io/v1alpha1", "ResourceInterpreterWebhookConfiguration"),
    ("networking.karmada.io/v1alpha1", "MultiClusterIngress"),
    ("networking.karmada.io/v1alpha1", "MultiClusterService"),
    ("autoscaling.karmada.io/v1alpha1", "FederatedHPA"),
    ("autoscaling.karmada.io/v1alpha1", "CronFederatedHPA"),
    ("search.karmada.io/v1alpha1", "ResourceRegistry"),
    ("karmada.io/v1", "Anything"),
]
# Implemented, or being built in (issue 36): never refused.
ALLOWED = [(rt.api_version, rt.kind) for rt in registry.BUILTINS if registry.is_karmada_group(rt.group)] + [
    ("policy.karmada.io/v1alpha1", "OverridePolicy"),
    ("policy.karmada.io/v1alpha1", "ClusterOverridePolicy"),
    ("apps.karmada.io/v1alpha1", "WorkloadRebalancer"),
]


@pytest.mark.parametrize(("api_version", "kind"), NOT_BUILT)
def test_a_karmada_kind_flotilla_does_not_build_is_no_template(api_version: str, kind: str) -> None:
    group = api_version.rpartition("/")[0]
    with pytest.raises(registry.UnsupportedKindError, match=rf"^{kind} \({group}\) is not supported by Flotilla$"):
        registry.for_kind(api_version, kind)


@pytest.mark.parametrize(("api_version", "kind"), ALLOWED)
def test_implemented_karmada_kinds_are_not_refused(api_version: str, kind: str) -> None:
    assert registry.for_kind(api_version, kind).kind == kind


@pytest.mark.parametrize("group", ["karmada.io", "policy.karmada.io", "a.b.karmada.io"])
def test_karmada_groups(group: str) -> None:
    assert registry.is_karmada_group(group)


@pytest.mark.parametrize("group", ["", "apps", "notkarmada.io", "karmada.io.example.com", "flink.apache.org"])
def test_other_groups(group: str) -> None:
    assert not registry.is_karmada_group(group)


@pytest.mark.parametrize(("api_version", "kind"), NOT_BUILT)
def test_admission_refuses_the_kind_naming_it(api_version: str, kind: str) -> None:
    doc = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "default"},
           "spec": {"anything": 1}}
    review = decode(doc)
    assert review.obj is None
    [error] = review.errors
    assert (error.path, error.reason) == ("kind", f"{kind} ({api_version.rpartition('/')[0]}) is not supported by "
                                          "Flotilla")


def test_a_policy_selecting_a_karmada_kind_is_refused() -> None:
    text = DIVIDED.replace("    - apiVersion: apps/v1\n      kind: Deployment\n",
                           "    - apiVersion: apps/v1\n      kind: Deployment\n"
                           "    - apiVersion: policy.karmada.io/v1alpha1\n      kind: OverridePolicy\n", 1)
    assert text != DIVIDED
    _, errors = admit(parse_document(text))
    assert [(e.path, e.reason.split(" is ")[0]) for e in errors] == [
        ("spec.resourceSelectors[1].apiVersion", "OverridePolicy (policy.karmada.io)")]
    assert "never propagated" in errors[0].reason


async def test_the_detector_never_binds_a_karmada_kind() -> None:
    """A stored template of a karmada.io kind (WorkloadRebalancer until it is built in, or one
    written before its kind was refused) is left alone: the reconcile returns before it reads
    any policy (the informers here are None, so reading one would raise)."""
    store = MemoryStore()
    template = meta_pb2.Unstructured(api_version="apps.karmada.io/v1alpha1", kind="WorkloadRebalancer",
                                     content=b'{"spec": {}}')
    template.metadata.name, template.metadata.namespace = "r", "default"
    if registry.for_object(template).is_template:
        await store.create(template)
    no_informer = cast(Any, None)
    detector = TemplateReconciler(store, RealClock(), no_informer, no_informer)
    for api_version, kind in [("apps.karmada.io/v1alpha1", "WorkloadRebalancer"), *NOT_BUILT, *ALLOWED]:
        assert await detector.reconcile(template_key(api_version, kind, "default", "r")) is None


async def test_a_karmada_kind_stored_before_it_was_refused_can_still_be_deleted() -> None:
    """Never written again, but not stuck: `flotillactl delete -f` of what was applied before."""
    store = MemoryStore()
    quota = meta_pb2.Unstructured(api_version="policy.karmada.io/v1alpha1", kind="FederatedResourceQuota",
                                  content=b'{"spec": {}}')
    quota.metadata.name, quota.metadata.namespace, quota.metadata.resource_version = "q", "default", "1"
    key = keys.etcd_key("federatedresourcequotas.policy.karmada.io", "default", "q")
    assert isinstance(await store.kv_create(key, quota.SerializeToString(), None), int)
    result, deleted = await Admission(store, RealClock()).delete(
        "policy.karmada.io/v1alpha1", "FederatedResourceQuota", "default", "q")
    assert result == DELETED and isinstance(deleted, meta_pb2.Unstructured) and deleted.metadata.name == "q"
    assert await store.kv_get(key) is None
