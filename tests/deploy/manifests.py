"""Reading deploy/: the rendered kustomizations and the Dockerfile, and turning a rendered
container spec into the local command line and environment it stands for."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
KUSTOMIZATIONS = {
    "base": DEPLOY / "k8s" / "base",
    "etcd-3": DEPLOY / "k8s" / "overlays" / "etcd-3",
    "monitoring": DEPLOY / "k8s" / "overlays" / "monitoring",
}
# python -m services.<module>, as the Deployment flotilla-<name> runs it.
SERVICES = {
    "webhook": "webhook",
    "status": "status",
    "taint-manager": "taint_manager",
    "scheduler": "scheduler",
    "eviction": "eviction",
    "executor": "executor",
}
KUBECTL = shutil.which("kubectl")
# How a pod names etcd: the flotilla-etcd Service's client port (FLOTILLA_ETCD_ENDPOINTS, or an
# argument such as the etcd-auth Job's --etcd-endpoints).
IN_CLUSTER_ETCD = re.compile(r"https://flotilla-etcd(\.flotilla-system(\.svc(\.cluster\.local)?)?)?:2379")

Obj = dict[str, Any]


@functools.cache
def render(name: str) -> tuple[Obj, ...]:
    assert KUBECTL is not None
    out = subprocess.run([KUBECTL, "kustomize", str(KUSTOMIZATIONS[name])], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def find(objs: tuple[Obj, ...], kind: str, name: str | None = None) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: tuple[Obj, ...], kind: str, name: str) -> Obj:
    found = find(objs, kind, name)
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def image_entrypoint() -> list[str]:
    entry = [rest for word, rest in dockerfile_instructions() if word == "ENTRYPOINT"]
    assert entry, "the Dockerfile has no ENTRYPOINT"
    value = json.loads(entry[-1])  # exec form
    assert isinstance(value, list)
    return [str(v) for v in value]


_VAR = re.compile(r"\$\((\w+)\)")


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: a defined variable is replaced, anything else kept."""
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), value)


def swap_ports(value: str, ports: Mapping[int, int]) -> str:
    for old, new in ports.items():
        value = str(new) if value == str(old) else re.sub(rf":{old}\b", f":{new}", value)
    return value


def local_process(objs: tuple[Obj, ...], container: Obj, *, pod_name: str, etcd_endpoint: str,
                  ports: Mapping[int, int], mounts: Mapping[str, str] | None = None
                  ) -> tuple[list[str], dict[str, str]]:
    """The command line and environment (FLOTILLA_* and the container's own variables only) that
    `container` gives, run here: `python` is this interpreter, the pod's IP is 127.0.0.1, the etcd
    endpoint (FLOTILLA_ETCD_ENDPOINTS, and an argument naming the in-cluster etcd) is
    `etcd_endpoint`, each container port is moved to its entry in `ports` and a path under a
    volume's mount path to the local directory `mounts` gives for it."""
    field_values = {"metadata.name": pod_name, "status.podIP": "127.0.0.1", "metadata.namespace": "flotilla-system"}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        ref = source["configMapRef"]["name"]
        env.update(one(objs, "ConfigMap", ref)["data"])
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = expand(var["value"], env)
        else:
            env[var["name"]] = field_values[var["valueFrom"]["fieldRef"]["fieldPath"]]
    env = {k: swap_mounts(swap_ports(v, ports), mounts or {}) for k, v in env.items()}
    if "FLOTILLA_ETCD_ENDPOINTS" in env:
        env["FLOTILLA_ETCD_ENDPOINTS"] = etcd_endpoint
    command = list(container.get("command") or image_entrypoint())
    if command[0] == "python":
        command[0] = sys.executable
    args = [etcd_endpoint if IN_CLUSTER_ETCD.fullmatch(expand(a, env)) else swap_ports(expand(a, env), ports)
            for a in container.get("args", [])]
    return command + args, env


def swap_mounts(value: str, mounts: Mapping[str, str]) -> str:
    for mount, local in mounts.items():
        if value.startswith(mount + "/"):
            return local + value[len(mount):]
    return value


# -- NetworkPolicies, evaluated as Kubernetes evaluates them (ingress) ----------------------

@dataclass(frozen=True)
class Peer:
    """Who opens a connection: a pod (its labels, its namespace and that namespace's labels),
    or, with `pod` None, something outside the cluster (a user's machine, a member's agent)."""

    name: str
    pod: Mapping[str, str] | None = None
    namespace: str = ""
    namespace_labels: Mapping[str, str] = field(default_factory=dict)


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions) on `labels`; {} selects everything."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        if not {"In": present and labels[key] in values, "NotIn": not present or labels[key] not in values,
                "Exists": present, "DoesNotExist": not present}[operator]:
            return False
    return True


def _peer_matches(rule_peer: Obj, policy_namespace: str, peer: Peer) -> bool:
    if "ipBlock" in rule_peer:
        block = rule_peer["ipBlock"]
        # Only "everything outside the cluster" is modelled: the whole address space, no exceptions.
        assert block["cidr"] in ("0.0.0.0/0", "::/0") and not block.get("except"), block
        return peer.pod is None
    if peer.pod is None:
        return False
    if "namespaceSelector" in rule_peer:
        if not selects(rule_peer["namespaceSelector"], peer.namespace_labels):
            return False
    elif peer.namespace != policy_namespace:
        return False
    return selects(rule_peer.get("podSelector", {}), peer.pod)


def _port_matches(rule_port: Obj, port: int, names: Mapping[str, int]) -> bool:
    if rule_port.get("protocol", "TCP") != "TCP":
        return False
    value = rule_port.get("port")
    if value is None:
        return True
    number = names.get(value) if isinstance(value, str) else value
    return number == port or (number is not None and "endPort" in rule_port and number <= port <= rule_port["endPort"])


def ingress_allowed(objs: tuple[Obj, ...], target: Obj, port: int, peer: Peer) -> bool:
    """Whether `peer` may open a TCP connection to `port` of the pods of the workload `target`
    (a Deployment or StatefulSet), under the rendered NetworkPolicies: allowed when no policy
    selects the pod for ingress, else when a rule of one that does lets it."""
    namespace = target["metadata"]["namespace"]
    template = target["spec"]["template"]
    labels = template["metadata"]["labels"]
    names = {p["name"]: p["containerPort"] for c in template["spec"]["containers"] for p in c.get("ports", [])
             if "name" in p}
    policies = [p for p in find(objs, "NetworkPolicy") if p["metadata"]["namespace"] == namespace
                and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                and selects(p["spec"]["podSelector"], labels)]
    if not policies:
        return True
    return any(
        (not rule.get("ports") or any(_port_matches(rp, port, names) for rp in rule["ports"]))
        and (not rule.get("from") or any(_peer_matches(rp, namespace, peer) for rp in rule["from"]))
        for policy in policies for rule in policy["spec"].get("ingress", []))
