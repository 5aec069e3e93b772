"""How ApplyBatch orders a request's objects (groups admitted one after another, each group's
objects concurrently) and how the client cuts a large set into requests."""

from __future__ import annotations

from typing import Any

from flotilla.cli.webhook_client import batches
from services.webhook.admission import Review
from services.webhook.servicer import waves


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
