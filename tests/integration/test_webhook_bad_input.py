"""Bad input through the real webhook over gRPC, on a real etcd: hostile documents get one line
from `flotillactl apply -f` and one violation from Apply, and nothing a rejected Apply was
given reaches etcd (its revision does not move)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings

from flotilla.aio.clock import RealClock
from flotilla.api.limits import MAX_DOCUMENT_BYTES
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.cli.webhook_client import ADDRESS_ENV
from flotilla.plane.benchmarks.hostile_documents import HOSTILE, Hostile, raw_request, request_for
from flotilla.security.context import client_tls
from flotilla.security.tls import grpc_channel
from flotilla.store import Store
from services.webhook.admission import Admission
from services.webhook.servicer import WebhookServicer, add_to_server
from tests.cli_runner import flotillactl
from tests.conftest import Security, wipe_objects
from tests.property.strategies import mutated_documents

APPLY = "/flotilla.v1.Webhook/Apply"


@pytest.fixture
async def webhook_address(store: Store, security: Security,
                          monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """The webhook servicer on a gRPC server of its own (free port, mutual TLS as a plane's), and
    flotillactl pointed at it."""
    server = grpc.aio.server()
    add_to_server(WebhookServicer(Admission(store, RealClock())), server)
    port = server.add_secure_port("127.0.0.1:0", security.client.server_credentials())
    await server.start()
    address = f"127.0.0.1:{port}"
    monkeypatch.setenv(ADDRESS_ENV, address)
    try:
        yield address
    finally:
        await server.stop(None)


async def revision(store: Store) -> int:
    return int((await store.client.get_prefix(b"/flotilla/")).header.revision)


async def apply_raw(address: str, body: bytes) -> webhook_pb2.AdmissionResponse:
    async with grpc_channel(address, client_tls()) as channel:
        call = channel.unary_unary(APPLY, request_serializer=lambda raw: raw,
                                   response_deserializer=webhook_pb2.AdmissionResponse.FromString)
        response: webhook_pb2.AdmissionResponse = await call(raw_request(body), timeout=30)
        return response


@pytest.mark.parametrize("case", HOSTILE, ids=lambda case: case.name)
async def test_flotillactl_apply_prints_one_line(case: Hostile, store: Store, webhook_address: str,
                                                 tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(case.text())
    before = await revision(store)
    code, out, err = await asyncio.to_thread(
        flotillactl, "--etcd-endpoints", store.endpoints or "", "apply", "-f", str(path))
    assert (code, out) == (1, "")
    (line,) = err.splitlines()
    assert line.startswith("error: ") and case.reason in line
    if case.path:
        assert f" {case.path}" in line
    assert await revision(store) == before


@pytest.mark.parametrize("case", [c for c in HOSTILE if c.body is not None or not c.refused_when_read],
                         ids=lambda case: case.name)
async def test_apply_answers_one_violation(case: Hostile, store: Store, webhook_address: str) -> None:
    body = case.request_body()
    assert body is not None
    before = await revision(store)
    response = await apply_raw(webhook_address, body)
    assert not response.allowed
    (violation,) = response.violations
    assert violation.path.startswith(case.path) and bool(violation.path) == bool(case.path)
    assert case.reason in violation.reason
    assert await revision(store) == before


async def test_a_request_past_grpcs_limit_is_refused_before_admission(store: Store, webhook_address: str) -> None:
    # gRPC's default 4 MiB receive limit answers first: a status, not a violation.
    body = b'{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"' + b"x" * (3 * MAX_DOCUMENT_BYTES) + b'"}}'
    before = await revision(store)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await apply_raw(webhook_address, body)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert await revision(store) == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=mutated_documents())
async def test_a_rejected_apply_writes_nothing(doc: dict[str, Any], store: Store, webhook_address: str) -> None:
    before = await revision(store)
    async with grpc_channel(webhook_address, client_tls()) as channel:
        response = await webhook_pb2_grpc.WebhookStub(channel).Apply(request_for(doc), timeout=30)
    if response.allowed:
        # Accepted ones are written; remove them so that every example starts from the same etcd.
        await wipe_objects(store)
        return
    assert response.violations and all(v.path for v in response.violations)
    assert await revision(store) == before
