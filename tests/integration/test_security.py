"""The secure default path against a real etcd and a real webhook process (both started by
tests/conftest.py with the session's certificates): a client without a certificate is refused
by each; Secrets are encrypted in etcd and rotation re-encrypts them; writes name their author."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import aetcd
import aetcd.exceptions
import aetcd.rpc
import grpc
import pytest

from flotilla.api import codec, registry
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.cli.connection import service_channel
from flotilla.cli.webhook_client import WebhookClient
from flotilla.member import Credentials
from flotilla.rules.cluster_secrets import SECRET_TYPE, secret_document
from flotilla.security import tls
from flotilla.security.crypto import PREFIX, EncryptionKeys, Key
from flotilla.store import Store, StoreError
from flotilla.store.connect import parse_endpoints
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import ENDPOINTS_PREFIX, Endpoint, list_endpoints
from flotilla.store.events import events_for
from flotilla.store.objects import SECRETS_PREFIX
from services.webhook.admission import APPLIED_BY_ANNOTATION
from tests.conftest import CtlResult, Security

pytestmark = pytest.mark.integration


def _trusting_only(ca: str) -> grpc.ChannelCredentials:
    """TLS that verifies the server but shows no client certificate."""
    return grpc.ssl_channel_credentials(Path(ca).read_bytes())


async def test_etcd_refuses_a_client_without_a_certificate(etcd: EmbeddedEtcd, security: Security) -> None:
    ((host, port),) = parse_endpoints(etcd.endpoint)
    plain = aetcd.Client(host=host, port=port, timeout=5)
    try:
        with pytest.raises(aetcd.exceptions.ClientError):
            await plain.get(b"/flotilla/")
    finally:
        await plain.close()
    # Trusting etcd is not enough: etcd wants a certificate of the client.
    ca_only = _trusting_only(security.etcd.ca)
    async with grpc.aio.secure_channel(f"{host}:{port}", ca_only) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await aetcd.rpc.KVStub(channel).Range(aetcd.rpc.RangeRequest(key=b"/flotilla/"), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_the_webhook_refuses_a_client_without_a_certificate(
        webhook: subprocess.Popen[bytes], store: Store, security: Security) -> None:
    endpoint = next(e for e in await list_endpoints(store, "webhook") if e.pid == webhook.pid)
    request = webhook_pb2.AdmissionRequest(object_json="{}")
    ca_only = _trusting_only(security.client.ca)
    for channel in (grpc.aio.insecure_channel(endpoint.address),
                    grpc.aio.secure_channel(endpoint.address, ca_only)):
        async with channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await webhook_pb2_grpc.WebhookStub(channel).Apply(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_writes_record_who_made_them(webhook: subprocess.Popen[bytes], store: Store) -> None:
    client = WebhookClient(store)
    document = {"apiVersion": "v1", "kind": "ConfigMap",
                # A document's own claim of authorship is replaced by the certificate's name.
                "metadata": {"name": "settings", "namespace": "default",
                             "annotations": {APPLIED_BY_ANNOTATION: "someone-else"}},
                "data": {"a": "1"}}
    response = await client.call(lambda s: s.Apply, webhook_pb2.AdmissionRequest(object_json=json.dumps(document)))
    assert response.allowed, response.violations
    rt = registry.for_kind("v1", "ConfigMap")
    stored = await store.get(rt, "default", "settings")
    assert stored.metadata.annotations[APPLIED_BY_ANNOTATION] == "tester"
    deleted = await client.call(lambda s: s.Delete, webhook_pb2.DeleteRequest(
        api_version="v1", kind="ConfigMap", namespace="default", name="settings"))
    assert deleted.result == "deleted"
    # Events are written after the answer: wait for them.
    wanted = {("Applied", "created by tester"), ("Deleted", "deleted by tester")}
    async with asyncio.timeout(30):
        while not wanted <= {(e.reason, e.message) for e in await events_for(store, stored)}:
            await asyncio.sleep(0.05)


class Listener:
    """A gRPC server that answers any call and remembers that one reached it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.server = grpc.aio.server()

        def answer(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            self.calls.append(context.peer())
            return b""

        handler = grpc.unary_unary_rpc_method_handler(answer)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "flotilla.v1.Webhook", {"Apply": handler}),))


@pytest.mark.parametrize("serving", ["plain", "another service's certificate", "a tool's certificate"])
async def test_an_endpoint_record_gets_no_plaintext_nor_a_misverified_call(
        serving: str, store: Store, security: Security, tmp_path: Path) -> None:
    """Anyone who can write an endpoint record (or the webhook's name in one) still cannot
    have a caller send a request, with a member token in it say, over plain gRPC or to a
    server whose certificate is not the webhook's."""
    listener = Listener()
    authority = tls.Authority(tmp_path, "unused", security.pki / "ca.crt", security.pki / "ca.key")
    if serving == "plain":
        port = listener.server.add_insecure_port("127.0.0.1:0")
    elif serving == "a tool's certificate":
        # Even one naming the webhook: a certificate issued to call cannot serve.
        tool = authority.issue("tool", "tool", [*tls.LOOPBACK, tls.service_server_name("webhook")], server=False,
                               client=True)
        port = listener.server.add_secure_port("127.0.0.1:0", tool.server_credentials())
    else:
        status = authority.issue("status", "status", [*tls.LOOPBACK, tls.service_server_name("status")])
        port = listener.server.add_secure_port("127.0.0.1:0", status.server_credentials())
    await listener.server.start()
    # What the record claims is what a caller once believed: plain, or the other service's name.
    claims = {"tls": "none"} if serving == "plain" else {"tls": "mutual", "tls_server_name": "flotilla-webhook"
                                                         if serving == "a tool's certificate" else "flotilla-status"}
    fake = Endpoint(service="claimed-by-the-record", id="fake", address=f"127.0.0.1:{port}", extra=claims)
    await store.client.put(f"{ENDPOINTS_PREFIX}webhook/fake".encode(), json.dumps(asdict(fake)).encode())
    try:
        (registered,) = [e for e in await list_endpoints(store, "webhook") if e.id == "fake"]
        assert registered.service == "webhook"  # where it is registered, not what it claims
        async with service_channel(registered) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await webhook_pb2_grpc.WebhookStub(channel).Apply(webhook_pb2.AdmissionRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert listener.calls == []
    finally:
        await store.client.delete(f"{ENDPOINTS_PREFIX}webhook/fake".encode())
        await listener.server.stop(None)


def _secret(name: str, token: str) -> object:
    return codec.from_dict(secret_document(name, Credentials(server="https://127.0.0.1:1", token=token, ca_data="")))


async def test_secrets_are_encrypted_in_etcd_and_rotation_rewrites_them(store: Store) -> None:
    assert store.keys is not None
    token = f"token-{uuid.uuid4()}"
    key = f"{SECRETS_PREFIX}karmada-cluster/member1".encode()

    async def raw(etcd_key: bytes) -> bytes:
        got = await store.client.get(etcd_key)
        return bytes(got.value)

    def plaintext_in(value: bytes) -> bool:
        return token.encode() in value or base64.b64encode(token.encode()) in value

    await store.create(_secret("member1", token))  # type: ignore[arg-type]
    sealed = await raw(key)
    assert sealed.startswith(PREFIX + store.keys.current.encode() + b":") and not plaintext_in(sealed)
    # A Secret from before encryption was turned on (or from a plane without it on purpose):
    # plaintext, refused on read (tests/integration/test_encryption_fails_closed.py), encrypted by a rewrite.
    unencrypted = Store(store.client, endpoints=store.endpoints, allow_plaintext=True)
    await unencrypted.create(_secret("member2", token))  # type: ignore[arg-type]
    assert plaintext_in(await raw(key.replace(b"member1", b"member2")))

    # Rotation: a new key first, the old one still listed; the rewrite moves both to the new key.
    new = Key("rotated", os.urandom(32))
    rotated = Store(store.client, endpoints=store.endpoints, keys=EncryptionKeys([new, *store.keys.keys]))
    assert await rotated.rewrite_secrets() == (2, 2)
    assert await rotated.rewrite_secrets() == (0, 2)
    for name in ("member1", "member2"):
        value = await raw(key.replace(b"member1", name.encode()))
        assert value.startswith(PREFIX + b"rotated:") and not plaintext_in(value)
    # The old key can go; a process still holding only the old key cannot read them.
    only_new = Store(store.client, endpoints=store.endpoints, keys=EncryptionKeys([new]))
    secret = await only_new.get(SECRET_TYPE, "karmada-cluster", "member1")
    assert json.loads(secret.content)["data"]["token"] == base64.b64encode(token.encode()).decode()
    with pytest.raises(StoreError, match="encrypted with key 'rotated'"):
        await store.get(SECRET_TYPE, "karmada-cluster", "member1")


def test_flotillactl_secrets_rewrite_encrypts_what_is_not(clean_etcd: EmbeddedEtcd,
                                                          ctl: Callable[..., CtlResult]) -> None:
    async def write_plaintext() -> None:
        store = await Store.connect(clean_etcd.endpoint)
        try:
            unencrypted = Store(store.client, endpoints=store.endpoints, allow_plaintext=True)
            await unencrypted.create(_secret("member1", "t0k3n"))  # type: ignore[arg-type]
        finally:
            await store.close()

    asyncio.run(write_plaintext())
    assert ctl("secrets", "rewrite").out == "1 of 1 secrets and works re-encrypted with key key1\n"
    assert ctl("secrets", "rewrite").out == "0 of 1 secrets and works re-encrypted with key key1 (all were already)\n"
    shown = ctl("get", "secrets", "-n", "karmada-cluster", "-o", "yaml")
    assert "<redacted: 5 bytes>" in shown.out and "dDBrM24=" not in shown.out
