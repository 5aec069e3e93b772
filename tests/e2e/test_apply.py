"""Admission end to end: the running webhook service, a real etcd, and flotillactl as a user runs it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from flotilla.api import codec
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from tests.admission_cases import INVALID_CASES
from tests.conftest import ROOT, CtlResult
from tests.factories import EXAMPLE_FILES

pytestmark = pytest.mark.usefixtures("webhook")
FLOTILLACTL = str(Path(sys.executable).parent / "flotillactl")
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation")


def flotillactl(etcd: EmbeddedEtcd, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FLOTILLACTL, "--etcd-endpoints", etcd.endpoint, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def etcd_revision(etcd: EmbeddedEtcd) -> int:
    async def read() -> int:
        s = await Store.connect(etcd.endpoint)
        try:
            return (await s.client.get_prefix(b"/flotilla/")).header.revision
        finally:
            await s.close()

    return asyncio.run(read())


def defaulted(etcd: EmbeddedEtcd, doc: dict[str, Any]) -> dict[str, Any]:
    """What the webhook's dry-run Default makes of a document."""

    async def call() -> dict[str, Any]:
        s = await Store.connect(etcd.endpoint)
        try:
            address = (await list_endpoints(s.client, "webhook"))[0].address
        finally:
            await s.close()
        async with grpc.aio.insecure_channel(address) as channel:
            reply = await webhook_pb2_grpc.WebhookStub(channel).Default(
                webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)))
        return json.loads(reply.object_json)

    return asyncio.run(call())


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj = json.loads(json.dumps(obj))
    for name in SERVER_FIELDS:
        obj["metadata"].pop(name, None)
    return obj


def get_json(etcd: EmbeddedEtcd, doc: dict[str, Any]) -> dict[str, Any]:
    meta = doc["metadata"]
    args = ["get", doc["kind"], meta["name"], "-o", "json"]
    if meta.get("namespace"):
        args += ["-n", meta["namespace"]]
    result = flotillactl(etcd, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_applies_and_reads_back_equal(clean_etcd: EmbeddedEtcd, path: Path) -> None:
    docs = codec.load_yaml_documents(path.read_text())
    applied = flotillactl(clean_etcd, "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines() == [f"{d['kind'].lower()}/{d['metadata']['name']} created" for d in docs]
    versions = []
    for doc in docs:
        stored = get_json(clean_etcd, doc)
        versions.append(stored["metadata"]["resourceVersion"])
        assert without_server_fields(stored) == without_server_fields(defaulted(clean_etcd, doc))
        # Defaulting only adds: everything the user wrote reads back as written.
        assert _contains(stored, doc), f"{doc['kind']}/{doc['metadata']['name']} lost what the user wrote"

    again = flotillactl(clean_etcd, "apply", "-f", str(path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == [f"{d['kind'].lower()}/{d['metadata']['name']} unchanged" for d in docs]
    assert [get_json(clean_etcd, d)["metadata"]["resourceVersion"] for d in docs] == versions


def _contains(stored: Any, written: Any) -> bool:
    if isinstance(written, dict):
        return isinstance(stored, dict) and all(k in stored and _contains(stored[k], v) for k, v in written.items())
    if isinstance(written, list):
        return isinstance(stored, list) and len(stored) >= len(written) and all(
            any(_contains(s, w) for s in stored) for w in written)
    return stored == written or (isinstance(written, str) and str(stored) == written)


def test_reapply_keeps_resource_version(clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "nginx-divided.yaml")
    assert ctl("apply", "-f", str(path)).code == 0
    before = json.loads(ctl("get", "pp", "nginx-propagation", "-n", "default", "-o", "json").out)
    revision = etcd_revision(clean_etcd)
    again = ctl("apply", "-f", str(path))
    assert again.out.splitlines() == ["deployment/nginx unchanged", "propagationpolicy/nginx-propagation unchanged"]
    after = json.loads(ctl("get", "pp", "nginx-propagation", "-n", "default", "-o", "json").out)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert etcd_revision(clean_etcd) == revision
    # A real change is `configured` and bumps generation.
    changed = path.read_text().replace("weight: 2", "weight: 3")
    result = ctl("apply", "-f", "-", stdin=changed)
    assert result.out.splitlines() == ["deployment/nginx unchanged", "propagationpolicy/nginx-propagation configured"]
    final = json.loads(ctl("get", "pp", "nginx-propagation", "-o", "json").out)
    assert final["metadata"]["generation"] == before["metadata"]["generation"] + 1


@pytest.mark.parametrize(("case_id", "text", "path", "reason"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES])
def test_invalid_document_is_rejected_and_changes_nothing(
    clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult], case_id: str, text: str, path: str, reason: str
) -> None:
    revision = etcd_revision(clean_etcd)
    result = ctl("apply", "-f", "-", stdin=text)
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert f"{path}: " in lines[0] and reason in lines[0], lines[0]
    assert "Traceback" not in result.err
    assert etcd_revision(clean_etcd) == revision


def test_one_bad_document_in_a_file_applies_none(clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    good = next(p for p in EXAMPLE_FILES if p.name == "cluster.yaml").read_text()
    bad = INVALID_CASES[0][1]
    revision = etcd_revision(clean_etcd)
    result = ctl("apply", "-f", "-", stdin=good + "\n---\n" + bad)
    assert result.code == 1
    assert etcd_revision(clean_etcd) == revision


def test_taint_and_untaint_a_cluster(clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "cluster.yaml")
    assert ctl("apply", "-f", str(path)).code == 0
    result = ctl("taint", "clusters", "member1", "dedicated=gpu:NoExecute")
    assert (result.code, result.out.strip()) == (0, "cluster/member1 tainted"), result.err
    cluster = json.loads(ctl("get", "clusters", "member1", "-o", "json").out)
    taints = {t["key"]: t for t in cluster["spec"]["taints"]}
    assert taints["dedicated"]["effect"] == "NoExecute" and "timeAdded" in taints["dedicated"]
    assert "timeAdded" not in taints["maintenance"]  # NoSchedule taints are not stamped
    duplicate = ctl("taint", "clusters", "member1", "dedicated=cpu:NoExecute")
    assert duplicate.code == 1 and "--overwrite" in duplicate.err
    assert ctl("taint", "clusters", "member1", "dedicated:NoExecute-").out.strip() == "cluster/member1 untainted"
    cluster = json.loads(ctl("get", "clusters", "member1", "-o", "json").out)
    assert [t["key"] for t in cluster["spec"]["taints"]] == ["maintenance"]
    missing = ctl("taint", "clusters", "member1", "nope:NoSchedule-")
    assert missing.code == 1 and 'taint "nope:NoSchedule" not found' in missing.err
    bad = ctl("taint", "clusters", "member1", "x=y:PreferNoSchedule")
    assert bad.code == 1 and len(bad.err.strip().splitlines()) == 1


def test_delete_by_file_and_by_name(clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "nginx-divided.yaml")
    assert ctl("apply", "-f", str(path)).code == 0
    result = ctl("delete", "pp", "nginx-propagation", "-n", "default")
    assert (result.code, result.out.strip()) == (0, "propagationpolicy/nginx-propagation deleted")
    result = ctl("delete", "-f", str(path))
    assert result.code == 1
    assert result.out.strip() == "deployment/nginx deleted"
    assert "not found" in result.err
    assert ctl("get", "deployments", "nginx").code == 1


def test_no_webhook_is_one_clear_line(private_etcd: EmbeddedEtcd) -> None:
    path = next(p for p in EXAMPLE_FILES if p.name == "cluster.yaml")
    result = flotillactl(private_etcd, "apply", "-f", str(path))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: no webhook service is registered in etcd at {private_etcd.endpoint} (is `flotilla up` running?)"
    )
