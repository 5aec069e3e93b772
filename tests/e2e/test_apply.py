"""Admission end to end: the running webhook service, a real etcd, and flotillactl as a user runs it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flotilla.api import codec
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.cli.kinds import KnownKinds
from flotilla.security.context import client_tls
from flotilla.security.tls import grpc_channel
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints
from services.webhook.admission import APPLIED_BY_ANNOTATION
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
            address = (await list_endpoints(s, "webhook"))[0].address
        finally:
            await s.close()
        async with grpc_channel(address, client_tls()) as channel:
            reply = await webhook_pb2_grpc.WebhookStub(channel).Default(
                webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)))
        return json.loads(reply.object_json)

    return asyncio.run(call())


def without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj = json.loads(json.dumps(obj))
    for name in SERVER_FIELDS:
        obj["metadata"].pop(name, None)
    # Who applied it is the server's to write (the client certificate's name).
    annotations = obj["metadata"].get("annotations", {})
    annotations.pop(APPLIED_BY_ANNOTATION, None)
    if not annotations:
        obj["metadata"].pop("annotations", None)
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
    install_crds_for(clean_etcd, docs)
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


def install_crds_for(etcd: EmbeddedEtcd, docs: list[dict[str, Any]]) -> None:
    """As on a Karmada API server, a custom kind (FlinkDeployment) needs its CRD applied first."""
    known = KnownKinds()
    for doc in docs:
        if not known.problem(doc):
            continue
        group, version = doc["apiVersion"].split("/")
        plural = doc["kind"].lower() + "s"
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": f"{plural}.{group}"},
               "spec": {"group": group, "scope": "Namespaced", "names": {"kind": doc["kind"], "plural": plural},
                        "versions": [{"name": version, "served": True, "storage": True}]}}
        result = subprocess.run([FLOTILLACTL, "--etcd-endpoints", etcd.endpoint, "apply", "-f", "-"], cwd=ROOT,
                                input=json.dumps(crd), capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr


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


def _doc(api_version: str, kind: str, name: str) -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: default\n"


GOOD_CONFIGMAP = _doc("v1", "ConfigMap", "fine")
UNKNOWN_KIND_CASES = [
    # (documents, the error lines, in document order)
    ([_doc("v1", "ConfigMapp", "x")],
     ['error: configmapp/x from "STDIN": no matches for kind "ConfigMapp" in version "v1" '
      '(did you mean "ConfigMap"?)']),
    ([GOOD_CONFIGMAP, _doc("apps/v2", "Deployment", "web")],
     ['error: deployment/web from "STDIN": no matches for kind "Deployment" in version "apps/v2" '
      "(Deployment is served at apps/v1)"]),
    # Every bad document is reported, the unknown kinds and what admission rejects alike.
    ([_doc("v1", "ConfigMapp", "a"), GOOD_CONFIGMAP, _doc("example.com/v1", "Widget", "w"), INVALID_CASES[0][1]],
     ['error: configmapp/a from "STDIN": no matches for kind "ConfigMapp" in version "v1" '
      '(did you mean "ConfigMap"?)',
      'error: widget/w from "STDIN": no matches for kind "Widget" in version "example.com/v1" '
      "(is its CustomResourceDefinition applied?)",
      None]),
    # A missing apiVersion is admission's to name, with its field path.
    (["kind: ConfigMap\nmetadata:\n  name: typeless\n", _doc("v1", "ConfigMapp", "x")],
     ["error: configmap/typeless: apiVersion: required",
      'error: configmapp/x from "STDIN": no matches for kind "ConfigMapp" in version "v1" '
      '(did you mean "ConfigMap"?)']),
]


@pytest.mark.parametrize(("docs", "lines"), UNKNOWN_KIND_CASES, ids=["typo", "version", "several", "no-apiversion"])
def test_unknown_kinds_are_each_one_line_and_nothing_is_written(
    clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult], docs: list[str], lines: list[str | None]
) -> None:
    revision = etcd_revision(clean_etcd)
    result = ctl("apply", "-f", "-", stdin="\n---\n".join(docs))
    assert (result.code, result.out) == (1, "")
    got = result.err.strip().splitlines()
    assert len(got) == len(lines), result.err
    for line, expected in zip(got, lines, strict=True):
        assert line.startswith("error: ")
        if expected is not None:
            assert line == expected
    assert etcd_revision(clean_etcd) == revision


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - {name: v1, served: true, storage: true}
"""


def test_a_custom_kind_is_known_once_its_crd_is_applied(
    clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult], tmp_path: Path
) -> None:
    widget = _doc("example.com/v1", "Widget", "w")
    assert ctl("apply", "-f", "-", stdin=widget).code == 1
    # In the same file as its CRD...
    path = tmp_path / "widget.yaml"
    path.write_text(WIDGET_CRD + "---\n" + widget)
    both = ctl("apply", "-f", str(path))
    assert both.code == 0, both.err
    assert both.out.splitlines() == ["customresourcedefinition/widgets.example.com created", "widget/w created"]
    # ... or in a later apply once the CRD is stored; a version it does not serve is still unknown.
    assert ctl("apply", "-f", "-", stdin=_doc("example.com/v1", "Widget", "w2")).code == 0
    wrong = ctl("apply", "-f", "-", stdin=_doc("example.com/v2", "Widget", "w3"))
    assert wrong.code == 1
    assert wrong.err.strip() == ('error: widget/w3 from "STDIN": no matches for kind "Widget" in version '
                                 '"example.com/v2" (Widget is served at example.com/v1)')
