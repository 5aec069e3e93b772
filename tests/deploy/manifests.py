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
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
KUSTOMIZATIONS = {
    "base": DEPLOY / "k8s" / "base",
    "etcd-3": DEPLOY / "k8s" / "overlays" / "etcd-3",
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
    endpoint is `etcd_endpoint`, each container port is moved to its entry in `ports` and a
    path under a volume's mount path to the local directory `mounts` gives for it."""
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
    args = [swap_ports(expand(a, env), ports) for a in container.get("args", [])]
    return command + args, env


def swap_mounts(value: str, mounts: Mapping[str, str]) -> str:
    for mount, local in mounts.items():
        if value.startswith(mount + "/"):
            return local + value[len(mount):]
    return value
