"""ApplyBatch without a network: how it orders a request's objects (groups admitted one after
another, each group's objects concurrently), how each object is counted, that an unexpected
failure is one object's INTERNAL result without a traceback, and how the client cuts a large set
into requests."""

from __future__ import annotations

import json
from typing import Any

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.v1 import webhook_pb2
from flotilla.cli.webhook_client import batches
from flotilla.store.memory import MemoryStore
from services.webhook.admission import Admission, Review
from services.webhook.servicer import WebhookServicer, waves
from tests.admission_cases import VALID_BASES
from tests.unit.test_webhook_metrics import PlainChannel, requests


def doc(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}}


def test_independent_objects_form_one_group() -> None:
    assert waves([doc("Deployment", f"d{i}") for i in range(5)]) == [[0, 1, 2, 3, 4]]


def test_a_kind_others_need_is_admitted_alone_in_file_order() -> None:
    docs = [doc("Deployment", "a"), doc("Namespace", "team"), doc("ConfigMap", "c"),
            doc("CustomResourceDefinition", "x.example.com"), doc("FlinkDeployment", "f"), doc("Secret", "s")]
    assert waves(docs) == [[0], [1], [2], [3], [4, 5]]


def test_a_second_document_for_one_object_waits_for_the_first() -> None:
    docs = [doc("ConfigMap", "a"), doc("ConfigMap", "b"), doc("Secret", "a"), doc("ConfigMap", "a"),
            doc("ConfigMap", "c")]
    assert waves(docs) == [[0, 1, 2], [3, 4]]


def test_documents_that_do_not_parse_go_along() -> None:
    assert waves([Review(None), "text", doc("ConfigMap", "a"), None]) == [[0, 1, 2, 3]]


def test_the_client_cuts_by_count_and_by_bytes_keeping_order() -> None:
    objects = [bytes([i]) * 10 for i in range(7)]
    assert [list(b) for b in batches(objects, max_objects=3, max_bytes=1000)] == [
        objects[0:3], objects[3:6], objects[6:7]]
    assert [list(b) for b in batches(objects, max_objects=100, max_bytes=25)] == [
        objects[0:2], objects[2:4], objects[4:6], objects[6:7]]
    # An object larger than a request's bytes travels alone.
    large = [b"a" * 5, b"b" * 50, b"c" * 5]
    assert [list(b) for b in batches(large, max_objects=100, max_bytes=20)] == [[large[0]], [large[1]], [large[2]]]
    assert list(batches([])) == []


def batch(*objects: bytes, dry_run: bool = False) -> webhook_pb2.AdmissionBatchRequest:
    return webhook_pb2.AdmissionBatchRequest(objects_json=list(objects), dry_run=dry_run)


async def test_each_object_is_counted_as_its_own_apply_or_validate() -> None:
    servicer = WebhookServicer(Admission(MemoryStore(), FakeClock()))
    (doc, *_) = codec.load_yaml_documents(VALID_BASES[0][1])
    good = json.dumps(doc).encode()
    outcomes = [(w, r) for w in ("apply", "validate") for r in ("allowed", "denied", "error")]
    before = {o: requests(*o) for o in outcomes}
    checked = await servicer.ApplyBatch(batch(good, b"{", dry_run=True), PlainChannel())
    applied = await servicer.ApplyBatch(batch(good, b"{", good), PlainChannel())
    assert [r.response.allowed for r in checked.results] == [True, False]
    assert [r.response.result for r in applied.results] == ["created", "", "unchanged"]
    assert {o: requests(*o) - before[o] for o in outcomes} == {
        ("apply", "allowed"): 2, ("apply", "denied"): 1, ("apply", "error"): 0,
        ("validate", "allowed"): 1, ("validate", "denied"): 1, ("validate", "error"): 0}


async def test_an_unexpected_failure_is_that_objects_result_without_a_traceback() -> None:
    class Failing(MemoryStore):
        async def try_get(self, ref: Any, namespace: str, name: str) -> Any:
            if name == "broken":
                raise RuntimeError("the disk is on fire\nTraceback (most recent call last): ...")
            return await super().try_get(ref, namespace, name)

    servicer = WebhookServicer(Admission(Failing(), FakeClock()))
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine"}, "data": {"a": "b"}}
    broken = {**config_map, "metadata": {"name": "broken"}}
    answer = await servicer.ApplyBatch(batch(json.dumps(broken).encode(), json.dumps(config_map).encode()),
                                       PlainChannel())
    failed, fine = answer.results
    assert (failed.error_code, failed.error) == (
        "INTERNAL", "admission failed (RuntimeError); the webhook's log has the details")
    assert fine.response.result == "created"
