"""Admission authorizes every request with Kubernetes RBAC, against a real webhook process and a
real etcd: each caller is the certificate it shows (CN the user, O its groups), denials are
PERMISSION_DENIED in Kubernetes' words and change nothing, nobody grants more than they hold,
and every decision is one line of the audit log."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from flotilla.api import registry
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.security import tls
from flotilla.security.rbac import MASTERS
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from tests.conftest import CtlResult, Security, start_service, stop_service
from tests.e2e.failover_support import eventually

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def audited_webhook(etcd: EmbeddedEtcd, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    data_dir = tmp_path_factory.mktemp("audited-webhook")
    audit = data_dir / "audit.log"
    proc = start_service("webhook", etcd, data_dir, "--audit-log-path", str(audit))
    yield proc, audit
    stop_service(proc)


class Caller:
    """One identity calling the webhook over mutual TLS with a certificate of the plane's CA."""

    def __init__(self, address: str, files: tls.TLSFiles) -> None:
        self.address, self.files = address, files

    async def call(self, method: str, request: Any) -> Any:
        async with tls.grpc_channel(self.address, self.files, "localhost") as channel:
            return await getattr(webhook_pb2_grpc.WebhookStub(channel), method)(request, timeout=30)

    async def apply(self, doc: dict[str, Any]) -> webhook_pb2.AdmissionResponse:
        response: webhook_pb2.AdmissionResponse = await self.call(
            "Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)))
        return response

    async def denied(self, method: str, request: Any) -> str:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await self.call(method, request)
        assert raised.value.code() == grpc.StatusCode.PERMISSION_DENIED, raised.value.details()
        return raised.value.details() or ""

    async def can(self, verb: str, group: str, resource: str, namespace: str = "", user: str = "",
                  groups: tuple[str, ...] = ()) -> bool:
        answer = await self.call("ReviewAccess", webhook_pb2.AccessReviewRequest(
            verb=verb, api_group=group, resource=resource, namespace=namespace, user=user, groups=groups))
        return bool(answer.allowed)


@pytest.fixture
async def callers(audited_webhook: tuple[subprocess.Popen[bytes], Path], store: Store, security: Security,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Caller]]:
    proc, _ = audited_webhook
    endpoint = next(e for e in await list_endpoints(store, "webhook") if e.pid == proc.pid)
    identities = issue(security, tmp_path_factory.mktemp("identities"))
    yield {key: Caller(endpoint.address, files) for key, files in identities.items()}


def issue(security: Security, directory: Path) -> dict[str, tls.TLSFiles]:
    """Client certificates of the session's CA: an administrator, a service's identity (no
    group), and two people."""
    authority = tls.Authority(directory, "unused", Path(security.pki) / "ca.crt", Path(security.pki) / "ca.key")
    wanted = {"admin": [MASTERS], "status": [], "alice": ["team-a"], "ann": []}
    return {name: authority.issue(name, name, [], server=False, client=True, groups=groups)
            for name, groups in wanted.items()}


def policy(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}}


def role_binding(name: str, namespace: str, role_kind: str, role: str, subject: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace}, "subjects": [subject],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}}


async def test_a_service_certificate_cannot_claim_workloads(callers: dict[str, Caller], store: Store) -> None:
    reason = await callers["status"].denied(
        "Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(policy("claim-all", "default"))))
    assert reason == ('User "status" cannot create resource "propagationpolicies" in API group '
                      '"policy.karmada.io" in the namespace "default"')
    assert await store.try_get(registry.PROPAGATION_POLICY, "default", "claim-all") is None
    assert (await callers["admin"].apply(policy("claim-all", "default"))).allowed
    # Updates and deletes are refused as well, and a dry run tells nothing of the stored object.
    await callers["status"].denied("Apply", webhook_pb2.AdmissionRequest(
        object_json=json.dumps(policy("claim-all", "default"))))
    await callers["status"].denied("Validate", webhook_pb2.AdmissionRequest(
        object_json=json.dumps(policy("claim-all", "default"))))
    await callers["status"].denied("Delete", webhook_pb2.DeleteRequest(
        api_version="policy.karmada.io/v1alpha1", kind="PropagationPolicy", namespace="default", name="claim-all"))
    assert await store.try_get(registry.PROPAGATION_POLICY, "default", "claim-all") is not None


async def test_a_role_binding_grants_its_role_in_its_namespace_only(callers: dict[str, Caller]) -> None:
    admin, alice = callers["admin"], callers["alice"]
    granted = await admin.apply(role_binding("team-a-edit", "team-a", "ClusterRole", "edit",
                                             {"kind": "Group", "name": "team-a"}))
    assert granted.allowed, granted.violations

    async def alice_may_edit() -> bool:
        return await alice.can("create", "policy.karmada.io", "propagationpolicies", "team-a")

    await eventually(alice_may_edit, 30, "the webhook sees the new RoleBinding")
    assert (await alice.apply(policy("mine", "team-a"))).allowed
    await alice.denied("Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(policy("mine", "default"))))
    # edit does not hand out roles.
    await alice.denied("Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(
        role_binding("more", "team-a", "ClusterRole", "admin", {"kind": "User", "name": "alice"}))))
    await alice.call("Delete", webhook_pb2.DeleteRequest(
        api_version="policy.karmada.io/v1alpha1", kind="PropagationPolicy", namespace="team-a", name="mine"))


async def test_nobody_grants_more_than_they_hold(callers: dict[str, Caller]) -> None:
    admin, ann = callers["admin"], callers["ann"]
    assert (await admin.apply(role_binding("ann-admin", "team-b", "ClusterRole", "admin",
                                           {"kind": "User", "name": "ann"}))).allowed

    async def ann_may_bind() -> bool:
        return await ann.can("create", "rbac.authorization.k8s.io", "rolebindings", "team-b")

    await eventually(ann_may_bind, 30, "the webhook sees ann's RoleBinding")
    # What ann holds in team-b she may hand on there; cluster-admin she does not hold.
    assert (await ann.apply(role_binding("bob-edit", "team-b", "ClusterRole", "edit",
                                         {"kind": "User", "name": "bob"}))).allowed
    reason = await ann.denied("Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(
        role_binding("ann-root", "team-b", "ClusterRole", "cluster-admin", {"kind": "User", "name": "ann"}))))
    assert "is attempting to grant RBAC permissions not currently held" in reason
    # The built-in roles cannot be replaced, even by an administrator.
    replaced = await admin.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                  "metadata": {"name": "view"}, "rules": []})
    assert not replaced.allowed
    assert [v.path for v in replaced.violations] == ["metadata.name"]


async def test_a_batch_refuses_each_object_the_caller_may_not_write_as_apply_does(
        callers: dict[str, Caller], store: Store) -> None:
    admin, alice = callers["admin"], callers["alice"]
    assert (await admin.apply(role_binding("team-c-admin", "team-c", "ClusterRole", "admin",
                                           {"kind": "Group", "name": "team-a"}))).allowed

    async def alice_may_bind() -> bool:
        return await alice.can("create", "rbac.authorization.k8s.io", "rolebindings", "team-c")

    await eventually(alice_may_bind, 30, "the webhook sees the new RoleBinding")
    forbidden = policy("theirs", "default")
    escalating = role_binding("alice-root", "team-c", "ClusterRole", "cluster-admin",
                              {"kind": "User", "name": "alice"})
    alone = [await alice.denied("Apply", webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)))
             for doc in (forbidden, escalating)]
    for dry_run in (True, False):
        answer = await alice.call("ApplyBatch", webhook_pb2.AdmissionBatchRequest(
            objects_json=[json.dumps(doc).encode() for doc in (forbidden, policy("ours", "team-c"), escalating)],
            dry_run=dry_run))
        refused, allowed, escalation = answer.results
        # Refused in a batch just as alone, in the same words; the object the caller may write is admitted.
        assert [(r.error_code, r.error) for r in (refused, escalation)] == [("PERMISSION_DENIED", a) for a in alone]
        assert "is attempting to grant RBAC permissions not currently held" in escalation.error
        assert allowed.response.allowed and allowed.response.result == ("" if dry_run else "created")
    assert await store.try_get(registry.PROPAGATION_POLICY, "default", "theirs") is None
    assert await store.try_get(registry.lookup("rolebindings"), "team-c", "alice-root") is None
    assert await store.try_get(registry.PROPAGATION_POLICY, "team-c", "ours") is not None


async def test_access_reviews_and_impersonation(callers: dict[str, Caller]) -> None:
    admin, status = callers["admin"], callers["status"]
    assert await admin.can("delete", "cluster.karmada.io", "clusters")
    assert not await status.can("create", "policy.karmada.io", "propagationpolicies", "default")
    # An administrator may ask for anyone; others may not impersonate.
    assert not await admin.can("create", "policy.karmada.io", "propagationpolicies", "default", user="status")
    assert await admin.can("create", "policy.karmada.io", "propagationpolicies", "default", user="x",
                           groups=(MASTERS,))
    await status.denied("ReviewAccess", webhook_pb2.AccessReviewRequest(
        verb="get", api_group="", resource="secrets", namespace="default", user="admin"))


async def test_every_decision_is_one_line_of_the_audit_log(
        audited_webhook: tuple[subprocess.Popen[bytes], Path], callers: dict[str, Caller]) -> None:
    _, audit = audited_webhook
    await callers["status"].denied("Apply", webhook_pb2.AdmissionRequest(
        object_json=json.dumps(policy("audited", "default"))))

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []

    async def recorded() -> bool:
        await asyncio.sleep(0)
        return any(r["user"] == "status" and r["name"] == "audited" for r in lines())

    await eventually(recorded, 30, "the denial in the audit log")
    record = next(r for r in lines() if r["user"] == "status" and r["name"] == "audited")
    assert {k: record[k] for k in ("method", "verb", "apiGroup", "resource", "namespace", "decision")} == {
        "method": "Apply", "verb": "create", "apiGroup": "policy.karmada.io", "resource": "propagationpolicies",
        "namespace": "default", "decision": "deny"}
    assert record["groups"] == ["system:authenticated"]


def test_flotillactl_issues_a_certificate_and_answers_can_i(
        webhook: subprocess.Popen[bytes], clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult],
        security: Security, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = ["--ca-cert", str(security.pki / "ca.crt"), "--ca-key", str(security.pki / "ca.key")]
    issued = ctl("certificate", "issue", "carol", "--group", "auditors", "--days", "2", "--out", str(tmp_path), *ca)
    assert issued.code == 0, issued.err
    assert f"export FLOTILLA_TLS_CA={tmp_path}/ca.crt FLOTILLA_TLS_CERT={tmp_path}/carol.crt" in issued.out
    # The administrator (the session's certificate) may; carol may not, and says so in kubectl's way.
    assert (ctl("auth", "can-i", "create", "pp").code, ctl("auth", "can-i", "create", "pp").out) == (0, "yes\n")
    assert ctl("auth", "can-i", "create", "pp", "--as", "carol", "--as-group", "auditors").out == "no\n"
    monkeypatch.setenv("FLOTILLA_TLS_CERT", str(tmp_path / "carol.crt"))
    monkeypatch.setenv("FLOTILLA_TLS_KEY", str(tmp_path / "carol.key"))
    denied = ctl("auth", "can-i", "delete", "clusters")
    assert (denied.code, denied.out) == (1, "no\n")
    applied = ctl("apply", "-f", "-", stdin=json.dumps(policy("carols", "default")))
    assert applied.code == 1
    assert applied.err == ('error: User "carol" cannot create resource "propagationpolicies" in API group '
                           '"policy.karmada.io" in the namespace "default"\n')
    # Bad input changes nothing and names what is wrong.
    refused = ctl("certificate", "issue", "carol", "--out", str(tmp_path), *ca)
    assert refused.code == 1 and "exists already" in refused.err
    assert "name 'a,b'" in ctl("certificate", "issue", "a,b", "--out", str(tmp_path), *ca).err
    assert "--as-group needs --as" in ctl("auth", "can-i", "get", "pp", "--as-group", "x").err
