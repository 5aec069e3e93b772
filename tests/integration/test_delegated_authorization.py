"""A service's own gRPC API (here the status service's GetClusterHealth) is authorized by the
webhook with RBAC, as a kubelet delegates to the API server: real processes, real etcd, mutual TLS."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from flotilla.api.v1 import status_pb2, status_pb2_grpc
from flotilla.security import tls
from flotilla.security.rbac import MASTERS
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from tests.conftest import Security, start_service, stop_service

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def status_service(etcd: EmbeddedEtcd, webhook: subprocess.Popen[bytes],
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_service("status", etcd, tmp_path_factory.mktemp("status"))
    yield proc
    stop_service(proc)


async def health(address: str, files: tls.TLSFiles) -> grpc.StatusCode:
    async with tls.grpc_channel(address, files, tls.service_server_name("status")) as channel:
        try:
            await status_pb2_grpc.ClusterHealthStub(channel).GetClusterHealth(
                status_pb2.GetClusterHealthRequest(cluster="no-such-cluster"), timeout=30)
        except grpc.aio.AioRpcError as e:
            return e.code()
    return grpc.StatusCode.OK


async def test_only_callers_rbac_allows_reach_a_services_api(status_service: subprocess.Popen[bytes], store: Store,
                                                             security: Security, tmp_path: Path) -> None:
    endpoint = next(e for e in await list_endpoints(store, "status") if e.pid == status_service.pid)
    authority = tls.Authority(tmp_path, "unused", Path(security.pki) / "ca.crt", Path(security.pki) / "ca.key")
    nobody = authority.issue("ann", "ann", [], server=False, client=True)
    admin = authority.issue("root-ish", "root-ish", [], server=False, client=True, groups=[MASTERS])
    assert await health(endpoint.address, nobody) == grpc.StatusCode.PERMISSION_DENIED
    # Allowed, the call reaches the servicer, which knows no such cluster.
    assert await health(endpoint.address, admin) not in (grpc.StatusCode.PERMISSION_DENIED,
                                                         grpc.StatusCode.UNAVAILABLE)
