"""flotilla_webhook_requests_total counts each answer of the webhook's RPCs by its outcome."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client import REGISTRY

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.v1 import webhook_pb2
from flotilla.store.memory import MemoryStore
from services.webhook.admission import Admission
from services.webhook.servicer import WebhookServicer, counted
from tests.admission_cases import VALID_BASES


def requests(webhook: str, result: str) -> float:
    return REGISTRY.get_sample_value("flotilla_webhook_requests_total",
                                     {"webhook": webhook, "result": result}) or 0.0


class PlainChannel:
    """The servicer context of a call on a plain channel: no peer certificate."""

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}


async def test_answers_are_counted_as_allowed_denied_or_error() -> None:
    servicer = WebhookServicer(Admission(MemoryStore(), FakeClock()))
    validate = counted("validate", servicer.Validate)
    (doc, *_) = codec.load_yaml_documents(VALID_BASES[0][1])
    before = {result: requests("validate", result) for result in ("allowed", "denied", "error")}

    allowed = await validate(webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)), PlainChannel())
    denied = await validate(webhook_pb2.AdmissionRequest(object_json="{"), PlainChannel())
    assert allowed.allowed and not denied.allowed

    async def fails(_request: Any, _context: Any) -> webhook_pb2.AdmissionResponse:
        raise RuntimeError("the store is gone")
    with pytest.raises(RuntimeError):
        await counted("validate", fails)(webhook_pb2.AdmissionRequest(), None)

    assert {result: requests("validate", result) - before[result] for result in before} == {
        "allowed": 1, "denied": 1, "error": 1}
