"""A preserved label that is no label value (docs/karmada-rules.md §12.3), through the executor's
binding controller on an in-memory store: the replacement's Work is written without it (its
apply would fail every time otherwise) and the binding says why, StatePreservationFailed naming
the rule and the value; a valid value goes into the manifest and the condition goes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec, keys, registry
from flotilla.api.conditions import get_condition
from flotilla.api.v1 import work_pb2
from flotilla.api.wellknown import RB_PERMANENT_ID_LABEL, STATE_PRESERVATION_FAILED_CONDITION
from flotilla.rules.eviction_tasks import extract_state
from flotilla.rules.preserved_labels import INVALID_LABEL_VALUE
from flotilla.store import MemoryStore
from flotilla.store.informer import Informer
from services.executor.binding_controller import BindingReconciler, index_works

JOB = "application.karmada.io/cluster-failover-jobid"
NAME = "nginx-deployment"
KEY = f"ResourceBinding:default/{NAME}"
WORK_NAME = keys.work_name("default", "nginx", "Deployment")


def template() -> Any:
    return codec.from_dict({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}})


def failed_over(job_id: str) -> work_pb2.ResourceBinding:
    """What the taint manager writes when it evicts member1 with purgeMode Directly: the task
    carries the value its rule extracted from member1's status, whatever that value is."""
    b = work_pb2.ResourceBinding(api_version="work.karmada.io/v1alpha2", kind="ResourceBinding")
    b.metadata.name, b.metadata.namespace = NAME, "default"
    b.metadata.labels[RB_PERMANENT_ID_LABEL] = "rb-id"
    b.spec.resource.api_version, b.spec.resource.kind = "apps/v1", "Deployment"
    b.spec.resource.namespace, b.spec.resource.name = "default", "nginx"
    b.spec.replicas = 2
    b.spec.clusters.add(name="member2", replicas=2)
    b.spec.failover.cluster.purge_mode = "Directly"
    b.spec.failover.cluster.state_preservation.rules.add(alias_label_name=JOB, json_path="{ .jobStatus.jobID }")
    b.status.aggregated_status.add(cluster_name="member1",
                                   status=json.dumps({"jobStatus": {"jobID": job_id}}).encode())
    state = extract_state(b, "member1", b.spec.failover.cluster.state_preservation.rules)
    b.spec.graceful_eviction_tasks.add(from_cluster="member1", purge_mode="Directly", reason="TaintUntolerated",
                                       producer="TaintManager", preserved_label_state=state,
                                       clusters_before_failover=["member1"])
    return b


@pytest.fixture
async def works_informer(store: MemoryStore) -> AsyncIterator[Informer[work_pb2.Work]]:
    informer = Informer(store, registry.WORK)
    index_works(informer)
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    yield informer
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def reconcile(store: MemoryStore, informer: Informer[work_pb2.Work], gate: bool = True) -> None:
    reconciler = BindingReconciler(store, informer, inject_preserved_labels=gate, clock=FakeClock())
    await reconciler.reconcile(KEY)


async def labels_sent(store: MemoryStore) -> dict[str, str]:
    work = await store.get(registry.WORK, keys.execution_namespace("member2"), WORK_NAME)
    return dict(json.loads(work.spec.workload.manifests[0])["metadata"]["labels"])


async def condition(store: MemoryStore) -> Any:
    binding = await store.get(registry.RESOURCE_BINDING, "default", NAME)
    return get_condition(binding.status.conditions, STATE_PRESERVATION_FAILED_CONDITION)


async def test_an_invalid_value_is_left_out_and_reported_then_a_valid_one_applied(
    store: MemoryStore, works_informer: Informer[work_pb2.Work]
) -> None:
    await store.create(template())
    # A job ID with a space and a colon: the member's status, not the policy, decided it.
    await store.create(failed_over("flink job:4f1d2c"))
    await reconcile(store, works_informer)

    # The replacement is written, without the label: it can be applied.
    labels = await labels_sent(store)
    assert JOB not in labels and labels["app"] == "nginx"
    found = await condition(store)
    assert found is not None
    assert (found.status, found.reason) == ("True", INVALID_LABEL_VALUE)
    assert found.message == (
        "the state preserved from cluster member1 is applied without 1 label(s): "
        f'label "{JOB}" (rule spec.failover.cluster.statePreservation.rules[0] (jsonPath "{{ .jobStatus.jobID }}")): '
        'value "flink job:4f1d2c" is not a valid label value: a valid label must be an empty string or consist '
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character")

    # Another pass on the same binding writes nothing more.
    version = (await store.get(registry.RESOURCE_BINDING, "default", NAME)).metadata.resource_version
    await reconcile(store, works_informer)
    assert (await store.get(registry.RESOURCE_BINDING, "default", NAME)).metadata.resource_version == version

    # A later failover whose value is a label value: injected, and the condition goes.
    def valid(binding: work_pb2.ResourceBinding) -> None:
        binding.spec.graceful_eviction_tasks[-1].preserved_label_state[JOB] = "4f1d2c"

    await store.mutate(registry.RESOURCE_BINDING, "default", NAME, valid)
    async with asyncio.timeout(5):
        while works_informer.get(f"{keys.execution_namespace('member2')}/{WORK_NAME}") is None:
            await asyncio.sleep(0.01)
    await reconcile(store, works_informer)
    assert (await labels_sent(store))[JOB] == "4f1d2c"
    assert await condition(store) is None


async def test_a_value_longer_than_a_label_is_reported_cut_short(
    store: MemoryStore, works_informer: Informer[work_pb2.Work]
) -> None:
    await store.create(template())
    await store.create(failed_over("j" * 5000))
    await reconcile(store, works_informer)
    assert JOB not in await labels_sent(store)
    found = await condition(store)
    assert found is not None and "must be no more than 63 characters" in found.message
    # Extraction keeps 256 characters of it; the condition shows 64.
    assert f'"{"j" * 64}"… (256 characters)' in found.message


async def test_without_the_gate_nothing_is_injected_and_nothing_reported(
    store: MemoryStore, works_informer: Informer[work_pb2.Work]
) -> None:
    await store.create(template())
    await store.create(failed_over("flink job"))
    await reconcile(store, works_informer, gate=False)
    assert JOB not in await labels_sent(store)
    assert await condition(store) is None
