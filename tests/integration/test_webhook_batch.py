"""ApplyBatch through a real gRPC server and a real etcd: many objects in one request, each
admitted as Apply admits it and answered on its own; a refused object changes nothing of its own
and does not stop the others; the client splits what one request cannot carry; and
`flotillactl apply -f DIRECTORY` prints what it printed when it sent one object at a time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from flotilla.aio.clock import RealClock
from flotilla.api import codec, registry
from flotilla.api.errors import UserError
from flotilla.api.limits import MAX_BATCH_OBJECTS
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.cli.webhook_client import ADDRESS_ENV, WebhookClient
from flotilla.security.context import client_tls
from flotilla.security.tls import grpc_channel
from flotilla.store import Store
from services.webhook.admission import Admission
from services.webhook.servicer import WebhookServicer, add_to_server
from tests.cli_runner import flotillactl
from tests.conftest import Security

pytestmark = pytest.mark.integration
NAMESPACE = "batch"


async def serve(store: Store, security: Security, *options: tuple[str, Any]) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server(options=list(options))
    add_to_server(WebhookServicer(Admission(store, RealClock())), server)
    port = server.add_secure_port("127.0.0.1:0", security.client.server_credentials())
    await server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture
async def webhook_address(store: Store, security: Security, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[str]:
    """The webhook servicer on a gRPC server of its own (mutual TLS), and flotillactl pointed at it."""
    server, address = await serve(store, security)
    monkeypatch.setenv(ADDRESS_ENV, address)
    try:
        yield address
    finally:
        await server.stop(None)


async def apply_batch(address: str, objects: list[bytes], dry_run: bool = False
                      ) -> list[webhook_pb2.AdmissionBatchResult]:
    async with grpc_channel(address, client_tls()) as channel:
        response: webhook_pb2.AdmissionBatchResponse = await webhook_pb2_grpc.WebhookStub(channel).ApplyBatch(
            webhook_pb2.AdmissionBatchRequest(objects_json=objects, dry_run=dry_run), timeout=30)
    return list(response.results)


def encoded(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def policy(name: str, min_groups: int = 1, weight: int = 1) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                     "placement": {
                         "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                         "spreadConstraints": [{"spreadByField": "cluster", "minGroups": min_groups,
                                                "maxGroups": 2}],
                         "replicaScheduling": {
                             "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                             "weightPreference": {"staticWeightList": [
                                 {"targetCluster": {"clusterNames": ["member1"]}, "weight": weight}]}}}}}


def config_map(name: str, data: str = "x") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NAMESPACE},
            "data": {"value": data}}


async def revision(store: Store) -> int:
    return int((await store.client.get_prefix(b"/flotilla/")).header.revision)


async def test_each_object_is_answered_and_a_bad_one_changes_nothing(store: Store, webhook_address: str) -> None:
    assert (await apply_batch(webhook_address, [encoded(policy("kept"))]))[0].response.result == "created"
    kept = await store.get(registry.PROPAGATION_POLICY, NAMESPACE, "kept")
    results = await apply_batch(webhook_address, [
        encoded(policy("web")),
        encoded(policy("broken", min_groups=3)),        # minGroups > maxGroups
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "caf\xe9"}}',  # not UTF-8
        encoded(config_map("settings")),
        b'{"apiVersion": "v1",',                          # not JSON
        encoded(policy("kept", min_groups=3)),          # an invalid update of a stored object
    ])
    assert [(r.error_code, r.response.allowed, r.response.result) for r in results] == [
        ("", True, "created"), ("", False, ""), ("", False, ""), ("", True, "created"), ("", False, ""),
        ("", False, "")]
    assert [v.path for v in results[1].response.violations] == ["spec.placement.spreadConstraints[0].minGroups"]
    assert "not UTF-8 at byte" in results[2].response.violations[0].reason
    assert "invalid JSON" in results[4].response.violations[0].reason
    assert results[5].response.violations[0].path == "spec.placement.spreadConstraints[0].minGroups"
    # A batch does not send the stored objects back.
    assert not any(r.response.object_json for r in results)
    assert await store.try_get(registry.PROPAGATION_POLICY, NAMESPACE, "web") is not None
    assert await store.try_get(registry.PROPAGATION_POLICY, NAMESPACE, "broken") is None
    assert await store.try_get(registry.lookup("configmaps"), NAMESPACE, "settings") is not None
    after = await store.get(registry.PROPAGATION_POLICY, NAMESPACE, "kept")
    assert after.metadata.resource_version == kept.metadata.resource_version

    # Again: unchanged, nothing written; a change is `configured`; a dry run writes nothing.
    before = await revision(store)
    again = await apply_batch(webhook_address, [encoded(policy("web")), encoded(config_map("settings"))])
    assert [r.response.result for r in again] == ["unchanged", "unchanged"]
    assert await revision(store) == before
    dry = await apply_batch(webhook_address, [encoded(policy("web", weight=3)), encoded(policy("x", 3))],
                            dry_run=True)
    assert [r.response.allowed for r in dry] == [True, False]
    assert await revision(store) == before
    changed = await apply_batch(webhook_address, [encoded(policy("web", weight=3))])
    assert changed[0].response.result == "configured"


async def test_a_later_document_for_the_same_object_wins(store: Store, webhook_address: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    results = await apply_batch(webhook_address, [
        encoded(namespace), *(encoded(config_map(f"c{i}")) for i in range(40)),
        encoded(config_map("c0", "second")), encoded(config_map("c0", "third"))])
    assert [r.response.result for r in results[:2]] == ["created", "created"]
    assert [r.response.result for r in results[-2:]] == ["configured", "configured"]
    stored = await store.get(registry.lookup("configmaps"), NAMESPACE, "c0")
    assert codec.to_dict(stored)["data"] == {"value": "third"}


async def test_the_server_bounds_a_batch_and_the_client_splits_it(store: Store, security: Security) -> None:
    # A server that takes requests of 64 KiB at most: 30 objects of 4 KiB do not fit in one.
    server, address = await serve(store, security, ("grpc.max_receive_message_length", 64 * 1024))
    try:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await apply_batch(address, [b"{}"] * (MAX_BATCH_OBJECTS + 1))
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert f"at most {MAX_BATCH_OBJECTS} objects" in (raised.value.details() or "")
        docs = [encoded(config_map(f"big{i:02d}", str(i) * 4096)) for i in range(30)]
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await apply_batch(address, docs)
        assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert await store.try_get(registry.lookup("configmaps"), NAMESPACE, "big00") is None
        async with WebhookClient(store) as client:
            client._addresses = [address]  # this server, not the registered ones
            results = await client.apply_batch(docs)
        assert [r.response.result for r in results] == ["created"] * 30
        stored = await store.list(registry.lookup("configmaps"), NAMESPACE)
        assert sorted(o.metadata.name for o in stored.items) == [f"big{i:02d}" for i in range(30)]
    finally:
        await server.stop(None)


def ctl(*args: str) -> Any:
    return asyncio.to_thread(flotillactl, *args)


async def test_flotillactl_apply_a_directory(store: Store, webhook_address: str, tmp_path: Path) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "b-policies.yaml").write_text(json.dumps(policy("web")) + "\n---\n" + json.dumps(policy("api")))
    (directory / "a-config.json").write_text(json.dumps(config_map("settings")))
    (directory / "notes.txt").write_text("not a manifest")
    (directory / "nested").mkdir()
    (directory / "nested" / "ignored.yaml").write_text(json.dumps(config_map("ignored")))
    endpoints = store.endpoints or ""
    code, out, err = await ctl("--etcd-endpoints", endpoints, "apply", "-f", str(directory))
    assert (code, err) == (0, "")
    assert out.splitlines() == ["configmap/settings created", "propagationpolicy/web created",
                                "propagationpolicy/api created"]
    code, out, err = await ctl("--etcd-endpoints", endpoints, "apply", "-f", str(directory))
    assert (code, err) == (0, "")
    assert out.splitlines() == ["configmap/settings unchanged", "propagationpolicy/web unchanged",
                                "propagationpolicy/api unchanged"]

    # One bad document anywhere: every problem printed, nothing written.
    (directory / "c-bad.yaml").write_text(json.dumps(policy("broken", min_groups=3)) + "\n---\n"
                                          + json.dumps({**policy("unknown"), "kind": "PropagationPolicyy"}))
    (directory / "b-policies.yaml").write_text(json.dumps(policy("web", weight=5)))
    before = await revision(store)
    code, out, err = await ctl("--etcd-endpoints", endpoints, "apply", "-f", str(directory))
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == ("error: propagationpolicy/broken: spec.placement.spreadConstraints[0].minGroups: "
                        "invalid value 3: must not be greater than maxGroups (2)")
    assert lines[1].startswith(f'error: propagationpolicyy/unknown from "{directory / "c-bad.yaml"}": ')
    assert len(lines) == 2 and "Traceback" not in err
    assert await revision(store) == before


async def test_a_webhook_without_apply_batch_is_named(store: Store, security: Security) -> None:
    """A webhook of an older Flotilla (no ApplyBatch) is one line naming it, not gRPC's words alone."""
    server = grpc.aio.server()
    handlers = {"Apply": grpc.unary_unary_rpc_method_handler(
        lambda request, context: webhook_pb2.AdmissionResponse(allowed=True),
        request_deserializer=webhook_pb2.AdmissionRequest.FromString,
        response_serializer=webhook_pb2.AdmissionResponse.SerializeToString)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("flotilla.v1.Webhook", handlers),))
    port = server.add_secure_port("127.0.0.1:0", security.client.server_credentials())
    await server.start()
    try:
        async with WebhookClient(store) as client:
            client._addresses = [f"127.0.0.1:{port}"]
            with pytest.raises(UserError, match="runs an older Flotilla than flotillactl"):
                await client.apply_batch([encoded(config_map("old"))])
    finally:
        await server.stop(None)
