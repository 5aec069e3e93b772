"""The plane's storage API against a real webhook process and a real etcd: a Pull agent does its
job (its Cluster's status, its Works' status, its Lease, its election) through it with no etcd
credential, and nothing of any other member's; a person reads what RBAC lets them read; nothing
undecodable gets in; nobody ends another's lease."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from flotilla.api import registry
from flotilla.api.owners import SERVICES
from flotilla.api.v1 import core_pb2, webhook_pb2, webhook_pb2_grpc, work_pb2
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.security import agents, tls
from flotilla.security.rbac import MASTERS, SERVICES_GROUP
from flotilla.store import Forbidden, Store, StoreError
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from flotilla.store.leader import LeaderElector
from flotilla.store.remote import RemoteStore
from tests.conftest import Security, start_service, stop_service
from tests.factories import make_cluster

pytestmark = pytest.mark.integration

CLUSTER, OTHER = "sa-one", "sa-two"


@pytest.fixture(scope="module")
def api_webhook(etcd: EmbeddedEtcd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    data_dir = tmp_path_factory.mktemp("storage-api")
    proc = start_service("webhook", etcd, data_dir, "--audit-log-path", str(data_dir / "audit.log"))
    yield proc
    stop_service(proc)


@pytest.fixture
async def stores(api_webhook: subprocess.Popen[bytes], store: Store, security: Security,
                 tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, RemoteStore]]:
    endpoint = next(e for e in await list_endpoints(store, "webhook") if e.pid == api_webhook.pid)
    authority = tls.Authority(tmp_path_factory.mktemp("ids"), "unused", Path(security.pki) / "ca.crt",
                              Path(security.pki) / "ca.key")
    wanted = {"admin": [MASTERS], "agent": [agents.GROUP], "bob": ["viewers"], "status": []}
    names = {"agent": agents.USER_PREFIX + CLUSTER}
    remote = {key: RemoteStore([endpoint.address], authority.issue(
        names.get(key, key), names.get(key, key), [], server=False, client=True, groups=groups))
        for key, groups in wanted.items()}
    for cluster in (CLUSTER, OTHER):
        with contextlib.suppress(StoreError):
            await store.create(make_cluster(cluster))
        with contextlib.suppress(StoreError):
            await store.create(_work(cluster))
    yield remote
    for s in remote.values():
        await s.close()


def _work(cluster: str) -> work_pb2.Work:
    work = work_pb2.Work()
    work.metadata.name, work.metadata.namespace = "web", f"karmada-es-{cluster}"
    work.spec.workload.manifests.append(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "web"}}).encode())
    return work


async def test_the_agent_updates_its_own_clusters_status_and_never_its_spec(stores: dict[str, RemoteStore]) -> None:
    agent = stores["agent"]
    mine = await agent.get(registry.CLUSTER, "", CLUSTER)
    mine.status.kubernetes_version = "v1.31.0"
    written = await agent.update_status(mine)
    assert written.status.kubernetes_version == "v1.31.0"
    # Annotations (the failover trace) it may stamp; taints and labels are the plane's.
    written.metadata.annotations["flotilla.io/traceparent"] = "00-1-2-01"
    written = await agent.update(written)
    written.spec.taints.add(key="x", effect="NoSchedule")
    with pytest.raises(StoreError, match="only its status, annotations and finalizers"):
        await agent.update(written)
    other = await agent.get(registry.CLUSTER, "", OTHER)
    other.status.kubernetes_version = "v0"
    with pytest.raises(Forbidden, match=f'User "agent-{CLUSTER}" cannot update resource "clusters/status"'):
        await agent.update_status(other)


async def test_the_agent_reads_and_reports_only_its_own_works(stores: dict[str, RemoteStore]) -> None:
    agent = stores["agent"]
    (work,) = (await agent.list(registry.WORK, f"karmada-es-{CLUSTER}")).items
    work.status.conditions.add(type="Applied", status="True", reason="AppliedSuccessful")
    await agent.update_status(work)
    work = await agent.get(registry.WORK, f"karmada-es-{CLUSTER}", "web")
    work.spec.workload.manifests[0] = b'{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}'
    with pytest.raises(StoreError, match="through admission"):
        await agent.update(work)
    with pytest.raises(Forbidden, match='cannot list resource "works"'):
        await agent.list(registry.WORK, f"karmada-es-{OTHER}")
    with pytest.raises(Forbidden):
        await agent.list(registry.WORK)
    with pytest.raises(Forbidden):
        await agent.get(registry.WORK, f"karmada-es-{OTHER}", "web")
    with pytest.raises(Forbidden, match='cannot list resource "secrets"'):
        await agent.kv_range("/flotilla/secrets/karmada-cluster/")
    with pytest.raises(Forbidden):
        await agent.kv_range("/flotilla/")


async def test_the_agent_keeps_its_lease_and_election_and_ends_no_one_elses(stores: dict[str, RemoteStore]) -> None:
    agent, admin = stores["agent"], stores["admin"]
    lease = await agent.grant_lease(10)
    assert await agent.refresh_lease(lease) == 10
    renewal = registry.LEASE.message()
    renewal.metadata.name, renewal.metadata.namespace = CLUSTER, "karmada-cluster"
    with contextlib.suppress(StoreError):
        await agent.create(renewal)
    foreign = registry.LEASE.message()
    foreign.metadata.name, foreign.metadata.namespace = OTHER, "karmada-cluster"
    with pytest.raises(Forbidden):
        await agent.create(foreign)

    elector = LeaderElector(agent, f"agent-{CLUSTER}", "replica-1", ttl=10)
    assert await elector._try_acquire()
    await elector.resign()
    with pytest.raises(Forbidden):
        await LeaderElector(agent, "executor", "replica-1", ttl=10)._try_acquire()

    theirs = await admin.grant_lease(10)
    with pytest.raises(Forbidden, match="is not held by"):
        await agent.revoke_lease(theirs)
    with pytest.raises(Forbidden, match="is not held by"):
        await agent.kv_create(f"/flotilla/endpoints/agent-{CLUSTER}/x", b"{}", theirs)
    assert await admin.refresh_lease(theirs) == 10
    await admin.revoke_lease(theirs)


async def test_the_agent_watches_its_works_and_no_others(stores: dict[str, RemoteStore], store: Store) -> None:
    agent = stores["agent"]
    _, revision = await agent.kv_range(f"/flotilla/works/karmada-es-{CLUSTER}/")
    async with contextlib.aclosing(agent.watch(f"/flotilla/works/karmada-es-{CLUSTER}/", revision + 1)) as events:
        await store.mutate(registry.WORK, f"karmada-es-{CLUSTER}", "web",
                           lambda w: w.metadata.labels.update({"seen": "yes"}))
        event = await anext(events)
        assert event.key == f"/flotilla/works/karmada-es-{CLUSTER}/web"
    with pytest.raises(Forbidden):
        async with contextlib.aclosing(agent.watch(f"/flotilla/works/karmada-es-{OTHER}/", revision)) as events:
            await anext(events)


async def test_people_read_what_rbac_lets_them(stores: dict[str, RemoteStore], store: Store) -> None:
    bob, admin = stores["bob"], stores["admin"]
    with pytest.raises(Forbidden, match='User "bob" cannot list resource "works"'):
        await bob.list(registry.WORK, f"karmada-es-{CLUSTER}")
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "viewers-view"}, "subjects": [{"kind": "Group", "name": "viewers"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}
    stored = Unstructured(api_version=binding["apiVersion"], kind=binding["kind"], content=json.dumps(binding).encode())
    stored.metadata.name = "viewers-view"
    with contextlib.suppress(StoreError):
        await store.create(stored)
    # The webhook's informer sees the binding a moment later.
    for _ in range(300):
        try:
            listed = await bob.list(registry.WORK, f"karmada-es-{CLUSTER}")
            break
        except Forbidden:
            await store.clock.sleep(0.1)
    assert [w.metadata.name for w in listed.items] == ["web"]
    # view reads no Secret; an administrator reads them decrypted without holding the key.
    with pytest.raises(Forbidden):
        await bob.kv_range("/flotilla/secrets/")
    secret = registry.for_kind("v1", "Secret")
    await admin.list(secret, "default")
    # Nothing undecodable is written through the API, and no object's content, even by an
    # administrator: that is admission's (validation, and no one granting more than they hold).
    with pytest.raises(StoreError, match="does not decode"):
        await admin.kv_create(f"/flotilla/works/karmada-es-{CLUSTER}/junk", b"\xff\xff", None)
    with pytest.raises(StoreError, match="through admission"):
        await admin.create(stored)
    with pytest.raises(StoreError, match="not served"):
        await admin.kv_get("/flotilla/leaseowners/1")
    # A service's certificate names no group: through the API it reads nothing.
    with pytest.raises(Forbidden):
        await stores["status"].try_get(registry.CLUSTER, "", CLUSTER)


async def test_events_of_an_agent_are_written(stores: dict[str, RemoteStore]) -> None:
    agent = stores["agent"]
    event = core_pb2.Event()
    event.metadata.name, event.metadata.namespace = f"{CLUSTER}.1", "default"
    event.reason = "Probe"
    lease = await agent.grant_lease(60)
    written = await agent.create(event, lease=lease)
    assert written.metadata.resource_version


@pytest.mark.parametrize("identity", [*SERVICES, "sim"])
async def test_a_service_identity_may_ask_about_callers_and_read_nothing(
        identity: str, api_webhook: subprocess.Popen[bytes], store: Store, security: Security, tmp_path: Path) -> None:
    """What `flotilla up` issues each service (in system:flotilla:services) and the simulator (no
    group): through the plane's API a service may ask whether its callers may call it, and the
    simulator not even that; neither reads a Secret or a binding."""
    endpoint = next(e for e in await list_endpoints(store, "webhook") if e.pid == api_webhook.pid)
    groups = [SERVICES_GROUP] if identity != "sim" else []
    files = tls.Authority(tmp_path, "unused", Path(security.pki) / "ca.crt", Path(security.pki) / "ca.key").issue(
        identity, identity, [], server=False, client=True, groups=groups)
    async with tls.grpc_channel(endpoint.address, files, tls.service_server_name("webhook")) as channel:
        ask = webhook_pb2.AccessReviewRequest(verb="get", api_group="", resource="secrets", user="ann")
        if identity == "sim":
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await webhook_pb2_grpc.WebhookStub(channel).ReviewAccess(ask, timeout=30)
            assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED
        else:
            answer = await webhook_pb2_grpc.WebhookStub(channel).ReviewAccess(ask, timeout=30)
            assert not answer.allowed and 'User "ann" cannot get resource "secrets"' in answer.reason
    remote = RemoteStore([endpoint.address], files)
    try:
        with pytest.raises(Forbidden, match=f'User "{identity}" cannot list resource "secrets"'):
            await remote.kv_range("/flotilla/secrets/karmada-cluster/")
        with pytest.raises(Forbidden):
            await remote.list(registry.RESOURCE_BINDING)
    finally:
        await remote.close()
