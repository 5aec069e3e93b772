"""A service's gRPC server bounds what one caller can make it hold: a message beyond
--max-message-bytes is refused by gRPC itself, before any servicer code reads it."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Iterator

import grpc
import pytest

from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.runtime.service import server_options
from flotilla.security import tls
from flotilla.security.context import client_tls
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from tests.conftest import start_service, stop_service

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def small_webhook(etcd: EmbeddedEtcd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_service("webhook", etcd, tmp_path_factory.mktemp("small-webhook"), "--max-message-bytes", "262144")
    yield proc
    stop_service(proc)


async def test_a_message_beyond_the_limit_is_refused(small_webhook: subprocess.Popen[bytes], store: Store) -> None:
    endpoint = next(e for e in await list_endpoints(store, "webhook") if e.pid == small_webhook.pid)
    huge = webhook_pb2.AdmissionRequest(object_json="x" * 300_000)
    async with tls.grpc_channel(endpoint.address, client_tls(), tls.service_server_name("webhook")) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await webhook_pb2_grpc.WebhookStub(channel).Validate(huge, timeout=30)
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_the_options_bound_streams_messages_and_pings() -> None:
    options = dict(server_options(argparse.Namespace(max_message_bytes=1024)))
    assert options["grpc.max_receive_message_length"] == 1024
    assert options["grpc.max_concurrent_streams"] > 0
    assert options["grpc.http2.min_recv_ping_interval_without_data_ms"] >= 10_000
