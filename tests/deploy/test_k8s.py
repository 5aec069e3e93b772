"""deploy/: the kustomizations render, every object is valid Kubernetes, the Deployments keep
the rules of issue 12 (probes, security, labels, resources), and each service starts locally
from exactly what its rendered container spec says and answers the probes it names."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.security import tls
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd, free_port
from flotilla.store.endpoints import list_endpoints
from tests.conftest import Security
from tests.deploy.manifests import (
    KUBECTL,
    KUSTOMIZATIONS,
    SERVICES,
    Obj,
    dockerfile_instructions,
    find,
    image_entrypoint,
    local_process,
    one,
    render,
)

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl (with kustomize) is not installed")
pytestmark = needs_kubectl

LABELS = ("name", "component", "part-of", "instance", "version")
# The oldest Kubernetes the manifests are for (gRPC probes are GA from 1.27) and the newest
# kubernetes-validate knows.
K8S_VERSIONS = ("1.27.0", "latest")


def container_of(deployment: Obj) -> Obj:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_kustomization_renders_every_service_and_etcd(kustomization: str) -> None:
    objs = render(kustomization)
    for name in SERVICES:
        one(objs, "Deployment", f"flotilla-{name}")
        one(objs, "ServiceAccount", f"flotilla-{name}")
    for name in ("webhook", "status", "taint-manager", "scheduler"):
        one(objs, "Service", f"flotilla-{name}")
    one(objs, "StatefulSet", "flotilla-etcd")
    one(objs, "PodDisruptionBudget", "flotilla-etcd")
    assert one(objs, "Service", "flotilla-etcd-headless")["spec"]["clusterIP"] == "None"
    assert len(find(objs, "ConfigMap")) == 1
    namespaced = [o for o in objs if o["kind"] != "Namespace"]
    assert {o["metadata"].get("namespace") for o in namespaced} == {"flotilla-system"}


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_every_object_validates_against_the_kubernetes_schemas(kustomization: str) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    for version in K8S_VERSIONS:
        target = kv.latest_version() if version == "latest" else version
        for obj in render(kustomization):
            try:
                kv.validate(obj, target, strict=True)
            except kv.ValidationError as e:
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} on Kubernetes {target}: {e}")


def test_kubernetes_validate_rejects_a_broken_object() -> None:
    kv = pytest.importorskip("kubernetes_validate")
    deployment = dict(one(render("base"), "Deployment", "flotilla-scheduler"))
    broken = {**deployment, "spec": {**deployment["spec"], "replicas": "two"}}
    with pytest.raises(kv.ValidationError):
        kv.validate(broken, kv.latest_version(), strict=True)


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_deployment_follows_the_rules(name: str) -> None:
    objs = render("base")
    module = SERVICES[name]
    deployment = one(objs, "Deployment", f"flotilla-{name}")
    spec, pod = deployment["spec"], deployment["spec"]["template"]["spec"]
    assert spec["replicas"] == 2
    for key in LABELS:
        assert f"app.kubernetes.io/{key}" in deployment["metadata"]["labels"], key
        assert f"app.kubernetes.io/{key}" in spec["template"]["metadata"]["labels"], key
    assert "app.kubernetes.io/version" not in spec["selector"]["matchLabels"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert pod["serviceAccountName"] == f"flotilla-{name}"
    one(objs, "ServiceAccount", pod["serviceAccountName"])
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0

    container = container_of(deployment)
    assert container["args"][0] == f"services.{module}"
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] > 0
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= container["resources"][kind].keys()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert {"grpc", "metrics"} <= ports.keys()

    probes = {k: container[f"{k}Probe"]["grpc"] for k in ("startup", "readiness", "liveness")}
    assert {p["port"] for p in probes.values()} == {ports["health"]}
    assert probes["readiness"]["service"] == module
    assert probes["liveness"].get("service", "") == ""

    flags = {}
    for source in container["envFrom"]:
        flags.update(one(objs, "ConfigMap", source["configMapRef"]["name"])["data"])
    assert flags["FLOTILLA_LEADER_ELECT"] == "true"
    assert flags["FLOTILLA_LISTEN_ADDRESS"].endswith(f":{ports['grpc']}")
    assert flags["FLOTILLA_METRICS_PORT"] == str(ports["metrics"])
    # The kubelet cannot present a client certificate: probes use the plain health-only port.
    assert flags["FLOTILLA_HEALTH_PORT"] == str(ports["health"])
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {str(Path(flags[f]).parent) for f in ("FLOTILLA_TLS_CERT", "FLOTILLA_ETCD_CERT",
                                                  "FLOTILLA_ENCRYPTION_KEY_FILE")} <= mounts
    etcd_service = re.fullmatch(r"https://([a-z0-9-]+):(\d+)", flags["FLOTILLA_ETCD_ENDPOINTS"])
    assert etcd_service, flags["FLOTILLA_ETCD_ENDPOINTS"]
    etcd = one(objs, "Service", etcd_service.group(1))
    assert int(etcd_service.group(2)) in {p["port"] for p in etcd["spec"]["ports"]}


@pytest.mark.parametrize("name", ["webhook", "status", "taint-manager", "scheduler"])
def test_service_selects_its_deployment(name: str) -> None:
    objs = render("base")
    service = one(objs, "Service", f"flotilla-{name}")
    labels = one(objs, "Deployment", f"flotilla-{name}")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert {p["targetPort"] for p in service["spec"]["ports"]} == {"grpc", "metrics"}


@pytest.mark.parametrize(("kustomization", "members"), [("base", 1), ("etcd-3", 3)])
def test_etcd_members_name_each_other(kustomization: str, members: int) -> None:
    objs = render(kustomization)
    etcd = one(objs, "StatefulSet", "flotilla-etcd")
    assert etcd["spec"]["replicas"] == members
    headless = one(objs, "Service", etcd["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    env = {e["name"]: e.get("value") for e in container_of(etcd)["env"]}
    peers = dict(m.split("=", 1) for m in env["ETCD_INITIAL_CLUSTER"].split(","))
    name = etcd["metadata"]["name"]
    host = headless["metadata"]["name"]
    assert peers == {f"{name}-{i}": f"https://{name}-{i}.{host}:2380" for i in range(members)}
    assert env["ETCD_CLIENT_CERT_AUTH"] == env["ETCD_PEER_CLIENT_CERT_AUTH"] == "true"
    pdb = one(objs, "PodDisruptionBudget", "flotilla-etcd")
    labels = etcd["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] == 1
    assert "app.kubernetes.io/version" not in str(etcd["spec"]["volumeClaimTemplates"])


def test_dockerfile_is_multi_stage_pinned_and_non_root() -> None:
    steps = dockerfile_instructions()
    args = dict(rest.split("=", 1) for word, rest in steps if word == "ARG" and "=" in rest)
    froms = [rest.split()[0] for word, rest in steps if word == "FROM"]
    assert len(froms) >= 2, "multi-stage"
    images = [args.get(f.strip("${}"), f) for f in froms]
    for image in images:
        assert re.fullmatch(r"python:3\.\d+\.\d+-slim(-\w+)?", image), f"{image}: pin an exact Python tag"
    user = [rest for word, rest in steps if word == "USER"][-1]
    uid = int(user.split(":")[0])
    assert uid > 0
    copied = " ".join(rest for word, rest in steps if word == "COPY")
    assert "tests" not in copied
    assert image_entrypoint() == ["python", "-m"]
    for deployment in find(render("base"), "Deployment"):
        assert container_of(deployment)["securityContext"]["runAsUser"] == uid


async def _health(address: str, service: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=2)
        return int(reply.status)


def secret_volumes(directory: Path, name: str, security: Security) -> dict[str, str]:
    """What the Secrets a service mounts would hold: its certificate (of the session's CA) as a
    kubernetes.io/tls Secret holds one, and the session's encryption keys."""
    certificate = tls.Authority(security.pki, "unused").issue(name, name, list(tls.LOOPBACK))
    (directory / "tls").mkdir(parents=True)
    for target, source in (("tls.crt", certificate.cert), ("tls.key", certificate.key), ("ca.crt", certificate.ca)):
        shutil.copy(source, directory / "tls" / target)
    (directory / "encryption").mkdir()
    shutil.copy(security.key_file, directory / "encryption" / "keys.yaml")
    return {"/etc/flotilla/tls": str(directory / "tls"), "/etc/flotilla/encryption": str(directory / "encryption")}


def _tail(log: Path) -> str:
    return log.read_text()[-2000:]


async def _serving(address: str, services: set[str], proc: subprocess.Popen[bytes], log: Path) -> None:
    async with asyncio.timeout(60):
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"exited {proc.returncode}: {_tail(log)}")
            try:
                statuses = [await _health(address, s) for s in sorted(services)]
                if all(s == health_pb2.HealthCheckResponse.SERVING for s in statuses):
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.1)


@pytest.mark.e2e
async def test_each_deployment_starts_locally_and_answers_its_probes(private_etcd: EmbeddedEtcd, tmp_path: Path,
                                                                     security: Security) -> None:
    """Every service, started at once from its rendered container spec (command from the image's
    ENTRYPOINT, args, envFrom and env) with only the etcd endpoint and the ports replaced."""
    objs = render("base")
    started: dict[str, tuple[subprocess.Popen[bytes], Obj, dict[int, int], Path, str]] = {}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FLOTILLA_", "OTEL_"))}
    try:
        for name in SERVICES:
            container = container_of(one(objs, "Deployment", f"flotilla-{name}"))
            ports = {p["containerPort"]: free_port() for p in container["ports"]}
            pod = f"flotilla-{name}-smoke"
            argv, env = local_process(objs, container, pod_name=pod, etcd_endpoint=private_etcd.endpoint,
                                      ports=ports, mounts=secret_volumes(tmp_path / name, name, security))
            log = tmp_path / f"{name}.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(argv, env={**clean, **env}, cwd=tmp_path, stdout=out,
                                        stderr=subprocess.STDOUT)
            started[name] = (proc, container, ports, log, pod)

        async def check(name: str) -> None:
            proc, container, ports, log, _ = started[name]
            probes = [container[f"{k}Probe"]["grpc"] for k in ("startup", "readiness", "liveness")]
            for port in {p["port"] for p in probes}:
                await _serving(f"127.0.0.1:{ports[port]}", {p.get("service", "") for p in probes}, proc, log)

        await asyncio.gather(*(check(name) for name in SERVICES))

        store = await Store.connect(private_etcd.endpoint)
        try:
            for name, (proc, container, ports, _, pod) in started.items():
                grpc_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
                metrics_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
                # Registered under the pod's name at the advertised $(POD_IP):<grpc port>.
                endpoints = await list_endpoints(store.client, SERVICES[name])
                assert [(e.id, e.address) for e in endpoints if e.pid == proc.pid] == [
                    (pod, f"127.0.0.1:{ports[grpc_port]}")]
                url = f"http://127.0.0.1:{ports[metrics_port]}/metrics"
                body = await asyncio.to_thread(lambda u=url: urllib.request.urlopen(u, timeout=5).read())
                assert b"# TYPE" in body
        finally:
            await store.close()
    finally:
        for proc, *_ in started.values():
            proc.terminate()
        deadline = time.monotonic() + 20
        for name, (proc, *_rest, log, _pod) in started.items():
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                pytest.fail(f"{name} did not stop on SIGTERM: {_tail(log)}")
    for name, (proc, *_rest, log, _pod) in started.items():
        assert proc.returncode == 0, f"{name} exited {proc.returncode}: {_tail(log)}"
