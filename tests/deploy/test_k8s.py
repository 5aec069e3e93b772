"""deploy/: the kustomizations render, every object is valid Kubernetes, the Deployments keep
the rules of issue 12 (probes, security, labels, resources), least privilege holds (issue 34:
NetworkPolicies, the encryption key only where Secrets are read or written, a service serving
gRPC and calling etcd with certificates of different Secrets), the etcd-auth Job turns etcd's auth
on with the bootstrap certificate and nothing else, and each service starts locally from exactly
what its rendered container spec says, as its own etcd user with its service's role, and answers
the probes it names; the Job's container, run locally the same way, turns auth on."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import aetcd.exceptions
import grpc
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flotilla.plane import etcd_access
from flotilla.plane.command import build_parser as flotilla_parser
from flotilla.runtime.service import build_parser
from flotilla.security import tls
from flotilla.store import Store
from flotilla.store.connect import make_client
from flotilla.store.embedded import EmbeddedEtcd, free_port
from flotilla.store.endpoints import list_endpoints
from tests.conftest import Security
from tests.deploy.custom_resources import CUSTOM_KINDS
from tests.deploy.manifests import (
    KUBECTL,
    KUSTOMIZATIONS,
    ROOT,
    SERVICES,
    Obj,
    Peer,
    dockerfile_instructions,
    find,
    image_entrypoint,
    ingress_allowed,
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
NAMESPACE = "flotilla-system"
# Where Prometheus may scrape from: namespaces with this label (docs/deploy.md).
METRICS_LABEL = ("flotilla.io/metrics", "allowed")
# The services that read or write Secrets, so decrypt or encrypt them: the only ones given the key.
SECRET_READERS = ("webhook", "status", "executor")
# Where the encryption key file comes from in a pod.
ENCRYPTION_SECRET = "flotilla-encryption"
# The Job that turns etcd's auth on (docs/deploy.md, step 3), the Secret it calls etcd with and
# that certificate's common name: etcd's root.
ETCD_AUTH_JOB = "flotilla-etcd-auth"
BOOTSTRAP_SECRET = "flotilla-etcd-bootstrap-tls"
BOOTSTRAP_CN = "etcd-bootstrap"


def container_of(deployment: Obj) -> Obj:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def container_env(objs: tuple[Obj, ...], container: Obj) -> dict[str, str]:
    """The variables with a literal value that a container gets: its ConfigMaps', then its env."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(one(objs, "ConfigMap", source["configMapRef"]["name"])["data"])
    env.update({var["name"]: var["value"] for var in container.get("env", []) if "value" in var})
    return env


def mounted_secrets(workload: Obj) -> dict[str, str]:
    """Secret name -> where the workload's container mounts it."""
    pod = workload["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
    return {secrets[m["name"]]: m["mountPath"] for m in container_of(workload).get("volumeMounts", [])
            if m["name"] in secrets}


def secret_of(workload: Obj, path: str) -> str:
    """The Secret the workload's container finds `path` in; "" when no Secret is mounted there."""
    return next((secret for secret, mount in mounted_secrets(workload).items() if path.startswith(mount + "/")), "")


def workloads(objs: tuple[Obj, ...]) -> list[Obj]:
    """Everything that runs pods: the Deployments, etcd's StatefulSet, the Job."""
    return [*find(objs, "Deployment"), *find(objs, "StatefulSet"), *find(objs, "Job")]


def assert_runs_locked_down(objs: tuple[Obj, ...], workload: Obj) -> Obj:
    """The rules a Deployment and the etcd-auth Job keep alike: the labels on the object and its pods,
    a ServiceAccount of its own name with no token, non-root, the RuntimeDefault seccomp profile, a
    read-only root filesystem, no privilege escalation, no capabilities, requests and limits. Its
    container."""
    name = workload["metadata"]["name"]
    template = workload["spec"]["template"]
    pod = template["spec"]
    for key in LABELS:
        assert f"app.kubernetes.io/{key}" in workload["metadata"]["labels"], key
        assert f"app.kubernetes.io/{key}" in template["metadata"]["labels"], key
    assert pod["serviceAccountName"] == name
    assert one(objs, "ServiceAccount", name)["automountServiceAccountToken"] is False
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}

    container = container_of(workload)
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] > 0
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security.get("privileged", False) is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert not security["capabilities"].get("add")
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= container["resources"][kind].keys()
    return container


def etcd_auth_arguments(job: Obj) -> argparse.Namespace:
    """The Job's command line (the image's ENTRYPOINT and its args), as `flotilla` parses it."""
    container = container_of(job)
    command = [*(container.get("command") or image_entrypoint()), *container["args"]]
    # `python -m flotilla.plane.command` is what the image's `flotilla` script runs.
    assert command[:3] == ["python", "-m", "flotilla.plane.command"], command
    return flotilla_parser().parse_args(command[3:])


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
    for name in ("flotilla-default-deny", "flotilla-etcd", "flotilla-services"):
        one(objs, "NetworkPolicy", name)
    one(objs, "Job", ETCD_AUTH_JOB)
    one(objs, "ServiceAccount", ETCD_AUTH_JOB)
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
            if obj["kind"] in CUSTOM_KINDS:
                continue  # kubernetes-validate has no CRD schemas: test_monitoring.py checks these
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
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert "app.kubernetes.io/version" not in spec["selector"]["matchLabels"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()

    container = assert_runs_locked_down(objs, deployment)
    assert container["args"][0] == f"services.{module}"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert {"grpc", "metrics"} <= ports.keys()

    probes = {k: container[f"{k}Probe"]["grpc"] for k in ("startup", "readiness", "liveness")}
    assert {p["port"] for p in probes.values()} == {ports["health"]}
    assert probes["readiness"]["service"] == module
    assert probes["liveness"].get("service", "") == ""

    flags = container_env(objs, container)
    assert flags["FLOTILLA_LEADER_ELECT"] == "true"
    assert flags["FLOTILLA_LISTEN_ADDRESS"].endswith(f":{ports['grpc']}")
    assert flags["FLOTILLA_METRICS_PORT"] == str(ports["metrics"])
    # The kubelet cannot present a client certificate: probes use the plain health-only port.
    assert flags["FLOTILLA_HEALTH_PORT"] == str(ports["health"])
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    files = [f for f in ("FLOTILLA_TLS_CERT", "FLOTILLA_ETCD_CERT", "FLOTILLA_ENCRYPTION_KEY_FILE") if f in flags]
    assert {str(Path(flags[f]).parent) for f in files} <= mounts
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


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_etcd_auth_job_turns_auth_on_in_the_cluster_etcd_with_the_bootstrap_secret_only(kustomization: str) -> None:
    """The Job flotilla-etcd-auth (docs/deploy.md, step 3) runs `flotilla etcd-auth` against the
    etcd the services use, with the deployed services as users and etcd-bootstrap as root; it keeps
    the Deployments' rules, calls etcd with exactly the bootstrap Secret (no encryption key, no
    other Secret), retries while etcd starts and stays once done."""
    objs = render(kustomization)
    job = one(objs, "Job", ETCD_AUTH_JOB)
    container = assert_runs_locked_down(objs, job)
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels["app.kubernetes.io/component"] == "etcd-auth"
        assert labels["app.kubernetes.io/name"] == ETCD_AUTH_JOB
    deployments = find(objs, "Deployment")
    versions = {w["metadata"]["labels"]["app.kubernetes.io/version"] for w in (*deployments, job)}
    assert len(versions) == 1 and job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/version"] in versions
    assert {container_of(d)["image"] for d in deployments} == {container["image"]}

    args = etcd_auth_arguments(job)
    assert args.command == "etcd-auth"
    assert args.admins == [BOOTSTRAP_CN]
    assert args.users == []  # so the deployed services' certificates, etcd_access.DEPLOYED
    etcd_service = re.fullmatch(r"https://([a-z0-9-]+):(\d+)", args.etcd_endpoints)
    assert etcd_service, args.etcd_endpoints
    service = one(objs, "Service", etcd_service.group(1))
    assert int(etcd_service.group(2)) in {p["port"] for p in service["spec"]["ports"]}
    etcd_pods = one(objs, "StatefulSet", "flotilla-etcd")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= etcd_pods.items()
    for deployment in deployments:
        assert container_env(objs, container_of(deployment))["FLOTILLA_ETCD_ENDPOINTS"] == args.etcd_endpoints

    # Exactly the bootstrap Secret, read-only, for FLOTILLA_ETCD_*; nothing else.
    volumes = job["spec"]["template"]["spec"]["volumes"]
    assert all(set(v) in ({"name", "emptyDir"}, {"name", "secret"}) for v in volumes), volumes
    assert [v["secret"]["secretName"] for v in volumes if "secret" in v] == [BOOTSTRAP_SECRET]
    assert list(mounted_secrets(job)) == [BOOTSTRAP_SECRET]
    assert all(m.get("readOnly") is True for m in container["volumeMounts"] if m["mountPath"] != "/tmp")
    env = container_env(objs, container)
    assert {secret_of(job, env[f"FLOTILLA_ETCD_{k}"]) for k in ("CERT", "KEY", "CACERT")} == {BOOTSTRAP_SECRET}
    assert "FLOTILLA_ENCRYPTION_KEY_FILE" not in env
    # Nothing from the ConfigMap either: its hashed name would change the Job's pod template,
    # which cannot change, whenever a flag does.
    assert "envFrom" not in container

    spec = job["spec"]
    assert spec["template"]["spec"]["restartPolicy"] in ("Never", "OnFailure")
    assert spec["backoffLimit"] >= 10, "retries outlast etcd starting"
    assert "ttlSecondsAfterFinished" not in spec, "the finished Job stays, for `kubectl wait` and its log"
    assert "activeDeadlineSeconds" not in spec
    assert "selector" not in spec, "Kubernetes generates a Job's selector"


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


def peers(objs: tuple[Obj, ...]) -> list[Peer]:
    """Everything that could open a connection to a pod of the plane: each of its own pods, and
    pods elsewhere that must get only what the policies give anyone."""
    namespace = one(objs, "Namespace", NAMESPACE)
    labels = {**namespace["metadata"].get("labels", {}), "kubernetes.io/metadata.name": NAMESPACE}
    own = [Peer(w["metadata"]["name"], w["spec"]["template"]["metadata"]["labels"], NAMESPACE, labels)
           for w in workloads(objs)]
    scheduler = one(objs, "Deployment", "flotilla-scheduler")["spec"]["template"]["metadata"]["labels"]
    return [
        *own,
        # Prometheus, in a namespace labelled as docs/deploy.md says.
        Peer("prometheus", {"app.kubernetes.io/name": "prometheus"}, "monitoring",
             {"kubernetes.io/metadata.name": "monitoring", METRICS_LABEL[0]: METRICS_LABEL[1]}),
        # Any workload of the host cluster; one dressed as the scheduler; a debugging pod in the
        # plane's own namespace, even one labelled part of flotilla.
        Peer("app", {"app": "shop"}, "default", {"kubernetes.io/metadata.name": "default"}),
        Peer("impostor", scheduler, "default", {"kubernetes.io/metadata.name": "default"}),
        Peer("debug", {"app.kubernetes.io/part-of": "flotilla", "app.kubernetes.io/component": "debug"},
             NAMESPACE, labels),
        # A user's machine, a CI job, a Pull agent in a member cluster.
        Peer("outside"),
    ]


def ports_of(workload: Obj) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in container_of(workload)["ports"]}


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_network_policies_let_each_port_be_reached_only_by_whom_it_serves(kustomization: str) -> None:
    """etcd's client port only from the six services and the etcd-auth Job, its peer port only from
    etcd; the services' API and plain health port from anywhere; metrics only from the labelled
    namespaces; the Job's pods from nobody; nothing else at all (issue 34)."""
    objs = render(kustomization)
    everyone = peers(objs)
    every_name = {p.name for p in everyone}

    def reached_by(workload: Obj, port: int) -> set[str]:
        return {p.name for p in everyone if ingress_allowed(objs, workload, port, p)}

    etcd = one(objs, "StatefulSet", "flotilla-etcd")
    ports = ports_of(etcd)
    assert ports == {"client": 2379, "peer": 2380, "probes": 2381}
    assert reached_by(etcd, ports["client"]) == {f"flotilla-{name}" for name in SERVICES} | {ETCD_AUTH_JOB}
    assert reached_by(etcd, ports["peer"]) == {"flotilla-etcd"}
    assert reached_by(etcd, ports["probes"]) == {"prometheus"}
    assert reached_by(etcd, 22) == set()
    for name in SERVICES:
        service = one(objs, "Deployment", f"flotilla-{name}")
        ports = ports_of(service)
        assert ports == {"grpc": 8443, "health": 8081, "metrics": 9090}
        assert reached_by(service, ports["grpc"]) == every_name, name
        assert reached_by(service, ports["health"]) == every_name, name
        assert reached_by(service, ports["metrics"]) == {"prometheus"}, name
        assert reached_by(service, 22) == set(), name
    job = one(objs, "Job", ETCD_AUTH_JOB)
    for port in (2379, 8443, 8081, 9090, 22):
        assert reached_by(job, port) == set(), port


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_a_default_deny_covers_every_pod_of_the_namespace(kustomization: str) -> None:
    objs = render(kustomization)
    deny = [p for p in find(objs, "NetworkPolicy") if p["spec"]["podSelector"] == {}
            and "Ingress" in p["spec"].get("policyTypes", ["Ingress"]) and not p["spec"].get("ingress")]
    assert [p["metadata"]["namespace"] for p in deny] == [NAMESPACE]
    # A pod someone adds to the namespace later is reached by nobody until a policy says so.
    stranger = {"metadata": {"name": "stranger", "namespace": NAMESPACE}, "spec": {"template": {
        "metadata": {"labels": {"app": "stranger"}},
        "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]}}}}
    for port in (8080, 8443, 2379):
        assert not any(ingress_allowed(objs, stranger, port, p) for p in peers(objs))


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_each_service_serves_with_one_secret_and_calls_etcd_with_another(kustomization: str) -> None:
    """Issue 34: a service's gRPC certificate, key and CA come from flotilla-<service>-tls, its etcd
    client certificate, key and CA from flotilla-<service>-client-tls, never the same Secret."""
    objs = render(kustomization)
    for name in SERVICES:
        deployment = one(objs, "Deployment", f"flotilla-{name}")
        env = container_env(objs, container_of(deployment))
        serving = {secret_of(deployment, env[f"FLOTILLA_TLS_{k}"]) for k in ("CERT", "KEY", "CA")}
        calling = {secret_of(deployment, env[f"FLOTILLA_ETCD_{k}"]) for k in ("CERT", "KEY", "CACERT")}
        assert serving == {f"flotilla-{name}-tls"}, name
        assert calling == {f"flotilla-{name}-client-tls"}, name
        assert serving.isdisjoint(calling), name


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_only_the_services_that_read_or_write_secrets_have_the_encryption_key(kustomization: str) -> None:
    objs = render(kustomization)
    (flags,) = find(objs, "ConfigMap")
    assert "FLOTILLA_ENCRYPTION_KEY_FILE" not in flags["data"]
    running = workloads(objs)
    assert ETCD_AUTH_JOB in {w["metadata"]["name"] for w in running}
    declared = {w["metadata"]["name"] for w in running
                if any(v.get("secret", {}).get("secretName") == ENCRYPTION_SECRET
                       for v in w["spec"]["template"]["spec"].get("volumes", []))}
    holders = {w["metadata"]["name"] for w in running if ENCRYPTION_SECRET in mounted_secrets(w)}
    assert declared == holders == {f"flotilla-{name}" for name in SECRET_READERS}
    for workload in running:
        env = container_env(objs, container_of(workload))
        if workload["metadata"]["name"] in holders:
            key_dir = mounted_secrets(workload)[ENCRYPTION_SECRET]
            assert env["FLOTILLA_ENCRYPTION_KEY_FILE"].startswith(key_dir + "/")
        else:
            assert "FLOTILLA_ENCRYPTION_KEY_FILE" not in env, workload["metadata"]["name"]


def test_the_webhook_writes_its_audit_log_to_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in its rendered spec moves the audit log off stdout, or authorization off RBAC."""
    from services.webhook.__main__ import SPEC

    objs = render("base")
    container = container_of(one(objs, "Deployment", "flotilla-webhook"))
    _, env = local_process(objs, container, pod_name="flotilla-webhook-0", etcd_endpoint="https://127.0.0.1:2379",
                           ports={})
    for name in list(os.environ):
        if name.startswith("FLOTILLA_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = build_parser(SPEC).parse_args(container["args"][1:])
    assert args.audit_log_path == "-"
    assert args.authorization_mode == "RBAC"


def test_flotilla_etcd_auth_defaults_to_the_deployed_certificates() -> None:
    """`flotilla etcd-auth` with no --user makes an etcd user of each common name docs/deploy.md
    issues, with the role of the service its Deployment runs."""
    assert etcd_access.DEPLOYED == SERVICES
    docs = (ROOT / "docs" / "deploy.md").read_text()
    issued = re.search(r'for name in \[([^\]]*)\]:\n(?:\s*# .*\n)+\s*ca\.issue\(name, name,[^\n]*\n'
                       r'\s*server=True, client=False\)\n(?:\s*# .*\n)+'
                       r'\s*ca\.issue\(f"\{name\}-client", name, \[\], server=False, client=True'
                       r'(?:, groups=\[[^\]]*\])?\)\n', docs)
    assert issued, "docs/deploy.md no longer issues the services' serving and client certificates in one loop"
    assert re.findall(r'"([^"]+)"', issued.group(1)) == list(SERVICES)


def test_docs_issue_the_bootstrap_certificate_the_job_calls_etcd_with() -> None:
    """docs/deploy.md step 2 issues a client-only certificate in no group whose common name is the
    Job's --admin, and puts it into the Secret the Job mounts; step 3 waits for the Job."""
    docs = (ROOT / "docs" / "deploy.md").read_text()
    secret = re.search(rf"create secret generic {BOOTSTRAP_SECRET} \\\n\s*--from-file=tls\.crt=pki/([\w-]+)\.crt "
                       r"--from-file=tls\.key=pki/\1\.key --from-file=ca\.crt=pki/ca\.crt\n", docs)
    assert secret, f"docs/deploy.md does not create Secret {BOOTSTRAP_SECRET}"
    issued = re.search(rf'ca\.issue\("{re.escape(secret.group(1))}", "([^"]+)", \[\], server=False, client=True\)\n',
                       docs)
    assert issued, f"docs/deploy.md does not issue pki/{secret.group(1)}.crt as a client-only certificate in no group"
    job = one(render("base"), "Job", ETCD_AUTH_JOB)
    assert etcd_auth_arguments(job).admins == [issued.group(1)] == [BOOTSTRAP_CN]
    assert f"kubectl -n {NAMESPACE} wait --for=condition=complete job/{ETCD_AUTH_JOB}" in docs


@pytest.mark.parametrize("kustomization", sorted(KUSTOMIZATIONS))
def test_every_image_is_pinned_by_digest(kustomization: str) -> None:
    """A tag can be pushed again; a digest cannot."""
    objs = render(kustomization)
    images = {c["image"] for kind in ("Deployment", "StatefulSet", "Job") for workload in find(objs, kind)
              for c in workload["spec"]["template"]["spec"]["containers"]}
    external = {image for image in images if not image.startswith("flotilla:")}
    assert external, "etcd's image at least"
    for image in external:
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", image), f"{image}: pin it by digest"


def test_dockerfile_is_multi_stage_pinned_and_non_root() -> None:
    steps = dockerfile_instructions()
    args = dict(rest.split("=", 1) for word, rest in steps if word == "ARG" and "=" in rest)
    froms = [rest.split()[0] for word, rest in steps if word == "FROM"]
    assert len(froms) >= 2, "multi-stage"
    images = [args.get(f.strip("${}"), f) for f in froms]
    for image in images:
        assert re.fullmatch(r"python:3\.\d+\.\d+-slim(-\w+)?@sha256:[0-9a-f]{64}", image), \
            f"{image}: pin an exact Python tag, by digest"
    # Every dependency from the lock, with hashes; the package itself resolves nothing.
    runs = " ".join(rest for word, rest in steps if word == "RUN")
    assert "--require-hashes -r requirements/run.lock" in runs and "--no-deps" in runs
    user = [rest for word, rest in steps if word == "USER"][-1]
    uid = int(user.split(":")[0])
    assert uid > 0
    copied = " ".join(rest for word, rest in steps if word == "COPY")
    assert "tests" not in copied
    assert image_entrypoint() == ["python", "-m"]
    for workload in [*find(render("base"), "Deployment"), *find(render("base"), "Job")]:
        assert container_of(workload)["securityContext"]["runAsUser"] == uid


async def _health(address: str, service: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=2)
        return int(reply.status)


def service_certificate(authority: tls.Authority, name: str) -> tls.TLSFiles:
    """A service's serving certificate as docs/deploy.md issues it: common name `name`, for its
    Service's names and for a port-forward, serverAuth only."""
    return authority.issue(name, name, [f"flotilla-{name}", f"flotilla-{name}.{NAMESPACE}.svc", *tls.LOOPBACK],
                           server=True, client=False)


def client_certificate(authority: tls.Authority, name: str) -> tls.TLSFiles:
    """A service's etcd client certificate as docs/deploy.md issues it: the same common name (its
    etcd user), clientAuth only."""
    return authority.issue(f"{name}-client", name, [], server=False, client=True)


def bootstrap_certificate(authority: tls.Authority) -> tls.TLSFiles:
    """The etcd-auth Job's certificate as docs/deploy.md issues it: common name etcd-bootstrap (etcd's
    root), clientAuth only, in no group."""
    return authority.issue(BOOTSTRAP_CN, BOOTSTRAP_CN, [], server=False, client=True)


def key_usages(cert_path: str) -> set[x509.ObjectIdentifier]:
    cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def secret_volumes(directory: Path, workload: Obj, authority: tls.Authority, security: Security) -> dict[str, str]:
    """What the Secrets the workload mounts would hold (and nothing it does not mount), made as
    docs/deploy.md makes them: flotilla-<name>-tls a kubernetes.io/tls-style Secret of the
    serving certificate issued for `name`, flotilla-<name>-client-tls one of its client
    certificate, flotilla-etcd-bootstrap-tls one of the bootstrap certificate, flotilla-encryption
    the session's encryption keys."""
    mounts = {}
    for secret, mount_path in mounted_secrets(workload).items():
        local = directory / secret
        local.mkdir(parents=True)
        mounts[mount_path] = str(local)
        if secret == ENCRYPTION_SECRET:
            shutil.copy(security.key_file, local / "keys.yaml")
            continue
        if secret == BOOTSTRAP_SECRET:
            certificate = bootstrap_certificate(authority)
        else:
            match = re.fullmatch(r"flotilla-(.+?)(-client)?-tls", secret)
            assert match, f"{workload['metadata']['name']} mounts Secret {secret}, which docs/deploy.md does not make"
            issue = client_certificate if match.group(2) else service_certificate
            certificate = issue(authority, match.group(1))
        for target, source in (("tls.crt", certificate.cert), ("tls.key", certificate.key), ("ca.crt", certificate.ca)):
            shutil.copy(source, local / target)
    return mounts


def admin_certificate(security: Security) -> tls.TLSFiles:
    """The administrator's certificate (CN admin, group system:masters), as docs/deploy.md issues it."""
    return tls.TLSFiles(str(security.pki / "ca.crt"), str(security.pki / "admin.crt"), str(security.pki / "admin.key"))


async def etcd_auth_as_an_operator(endpoint: str, admin: tls.TLSFiles, env: dict[str, str]) -> str:
    """`flotilla etcd-auth --etcd-endpoints URL` with the admin certificate in FLOTILLA_ETCD_*,
    as docs/deploy.md says to run it once etcd is up; its output."""
    command = [sys.executable, "-m", "flotilla.plane.command", "etcd-auth", "--etcd-endpoints", endpoint]
    done = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=60,
        env={**env, "FLOTILLA_ETCD_CACERT": admin.ca, "FLOTILLA_ETCD_CERT": admin.cert, "FLOTILLA_ETCD_KEY": admin.key})
    assert done.returncode == 0, done.stderr
    return done.stdout


def pod_environment(tmp_path: Path) -> dict[str, str]:
    """This process's environment without its FLOTILLA_* and OTEL_* variables and with no context of
    this machine's (`flotilla up`'s current plane): a pod has none."""
    (tmp_path / "config").mkdir(exist_ok=True)
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("FLOTILLA_", "OTEL_"))},
            "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


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
    ENTRYPOINT, args, envFrom and env) with only the etcd endpoint and the ports replaced, and
    its Secret volumes by what docs/deploy.md puts in them; etcd's auth turned on first with
    `flotilla etcd-auth`, so each runs as its own etcd user with its service's role."""
    objs = render("base")
    started: dict[str, tuple[subprocess.Popen[bytes], Obj, dict[int, int], Path, str]] = {}
    clean = pod_environment(tmp_path)
    admin = admin_certificate(security)
    report = await etcd_auth_as_an_operator(private_etcd.endpoint, admin, clean)
    assert "etcd user taint-manager: role taint_manager" in report and "auth is on" in report
    authority = tls.Authority(tmp_path / "pki", "unused", security.pki / "ca.crt", security.pki / "ca.key")
    try:
        for name in SERVICES:
            deployment = one(objs, "Deployment", f"flotilla-{name}")
            container = container_of(deployment)
            ports = {p["containerPort"]: free_port() for p in container["ports"]}
            pod = f"flotilla-{name}-smoke"
            argv, env = local_process(objs, container, pod_name=pod, etcd_endpoint=private_etcd.endpoint,
                                      ports=ports, mounts=secret_volumes(tmp_path / name, deployment, authority,
                                                                         security))
            # What it serves gRPC with cannot call; what it calls etcd with cannot serve.
            assert key_usages(env["FLOTILLA_TLS_CERT"]) == {ExtendedKeyUsageOID.SERVER_AUTH}, name
            assert key_usages(env["FLOTILLA_ETCD_CERT"]) == {ExtendedKeyUsageOID.CLIENT_AUTH}, name
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

        # Auth is on: a service's client certificate gets only its role (the scheduler reads no Secret).
        scheduler = make_client(private_etcd.endpoint, tls=client_certificate(authority, "scheduler"))
        try:
            await scheduler.connect()
            await scheduler.get(b"/flotilla/clusters/member1")
            with pytest.raises(aetcd.exceptions.ClientError, match="permission denied"):
                await scheduler.get(b"/flotilla/secrets/karmada-cluster/member1")
        finally:
            await scheduler.close()

        store = await Store.connect(private_etcd.endpoint, tls=admin)
        try:
            for name, (proc, container, ports, _, pod) in started.items():
                grpc_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
                metrics_port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
                # Registered under the pod's name at the advertised $(POD_IP):<grpc port>.
                endpoints = await list_endpoints(store, SERVICES[name])
                assert [(e.id, e.address) for e in endpoints if e.pid == proc.pid] == [
                    (pod, f"127.0.0.1:{ports[grpc_port]}")]
                url = f"http://127.0.0.1:{ports[metrics_port]}/metrics"
                body = await asyncio.to_thread(_fetch, url)
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


def quantity(text: str) -> int:
    """A Kubernetes memory quantity ("256Mi") in bytes."""
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("k", 10**3), ("M", 10**6), ("G", 10**9)):
        if text.endswith(suffix):
            return int(text[: -len(suffix)]) * factor
    return int(text)


def run_to_the_end(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[int, str, int]:
    """Run a command to its end (a minute at most): its exit code, its output, its peak resident
    memory in bytes."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, log.read_text(), usage.ru_maxrss * 1024
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"{argv} did not end within a minute: {_tail(log)}")
        time.sleep(0.05)


@pytest.mark.e2e
async def test_the_etcd_auth_job_runs_locally_and_turns_auth_on(private_etcd: EmbeddedEtcd, tmp_path: Path,
                                                                security: Security) -> None:
    """The Job's rendered container spec (command from the image's ENTRYPOINT, args, env), run here
    with only the in-cluster etcd's address replaced and its Secret volume by what docs/deploy.md puts
    in it (the bootstrap certificate, issued by the test CA): it fails while etcd does not answer (so
    the Job retries), then turns auth on with each service its own etcd user, etcd-bootstrap root and
    the administrator's certificate nothing, within the container's memory limit; run again, as
    after an upgrade, it succeeds the same."""
    objs = render("base")
    job = one(objs, "Job", ETCD_AUTH_JOB)
    container = container_of(job)
    limit = quantity(container["resources"]["limits"]["memory"])
    clean = pod_environment(tmp_path)
    authority = tls.Authority(tmp_path / "pki", "unused", security.pki / "ca.crt", security.pki / "ca.key")
    mounts = secret_volumes(tmp_path / "job", job, authority, security)

    async def run(endpoint: str, attempt: str) -> tuple[int, str, int]:
        argv, env = local_process(objs, container, pod_name=f"{ETCD_AUTH_JOB}-{attempt}", etcd_endpoint=endpoint,
                                  ports={}, mounts=mounts)
        assert endpoint in argv and not any("flotilla-etcd" in a for a in argv), argv
        assert key_usages(env["FLOTILLA_ETCD_CERT"]) == {ExtendedKeyUsageOID.CLIENT_AUTH}
        return await asyncio.to_thread(run_to_the_end, argv, {**clean, **env}, tmp_path, tmp_path / f"{attempt}.log")

    # etcd not answering yet: the pod fails, and the Job starts another.
    code, out, _ = await run(f"https://127.0.0.1:{free_port()}", "early")
    assert code != 0 and "cannot turn etcd auth on" in out, out

    for attempt in ("first", "after-an-upgrade"):
        code, out, peak = await run(private_etcd.endpoint, attempt)
        assert code == 0, out
        for user, role in SERVICES.items():
            assert f"etcd user {user}: role {role}" in out, out
        assert f"etcd root: {BOOTSTRAP_CN}; auth is on" in out, out
        assert peak < limit, f"{attempt}: peak {peak} bytes, limit {limit}"

    secret = b"/flotilla/secrets/karmada-cluster/member1"
    bootstrap = make_client(private_etcd.endpoint, tls=tls.TLSFiles(*(
        str(tmp_path / "job" / BOOTSTRAP_SECRET / name) for name in ("ca.crt", "tls.crt", "tls.key"))))
    scheduler = make_client(private_etcd.endpoint, tls=client_certificate(authority, "scheduler"))
    admin = make_client(private_etcd.endpoint, tls=admin_certificate(security))
    try:
        # The bootstrap certificate is etcd's root.
        await bootstrap.connect()
        await bootstrap.put(secret, b"token")
        await bootstrap.put(b"/flotilla/clusters/member1", b"cluster")
        # A service's client certificate gets only its role: the scheduler reads no Secret.
        await scheduler.connect()
        await scheduler.get(b"/flotilla/clusters/member1")
        with pytest.raises(aetcd.exceptions.ClientError, match="permission denied"):
            await scheduler.get(secret)
        # The administrator's certificate has no etcd user: it works through the plane's API.
        await admin.connect()
        with pytest.raises(aetcd.exceptions.ClientError):
            await admin.get(b"/flotilla/clusters/member1")
    finally:
        for client in (bootstrap, scheduler, admin):
            await client.close()
