"""Unmodified kubectl against one simulated member, with nothing but the kubeconfig the simulator
wrote: HTTPS with the simulator's CA, the cluster's own URL, server-side Tables, OpenAPI v3 and
strict field validation, scale, describe, wait, delete, api-resources.

kubectl runs with its own HOME and cache directory, so no user state is read or written.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from flotilla.aio.clock import RealClock

if TYPE_CHECKING:
    from tests.sim_fixtures import StartSim

KUBECTL = shutil.which("kubectl")
pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH (it is in CI)")]

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


@dataclass
class Result:
    code: int
    out: str
    err: str


class Kubectl:
    """kubectl with the simulator's kubeconfig and a HOME and cache of its own."""

    def __init__(self, kubeconfig: Path, home: Path) -> None:
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECACHEDIR": str(home / "cache"),
                    "KUBECONFIG": str(kubeconfig)}

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        assert KUBECTL is not None
        return await asyncio.create_subprocess_exec(
            KUBECTL, *args, env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)

    async def __call__(self, *args: str, stdin: str | None = None, timeout: float = 20.0) -> Result:
        proc = await self.spawn(*args)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        return Result(proc.returncode or 0, out.decode(), err.decode())


@pytest.fixture
async def kubectl(start_sim: StartSim, tmp_path: Path) -> Kubectl:
    server = await start_sim("member1", clock=RealClock(), pod_ready_delay=0.2, nodes=2)
    return Kubectl(server.kubeconfig_path("member1"), tmp_path / "home")


async def ok(kubectl: Kubectl, *args: str, stdin: str | None = None) -> str:
    result = await kubectl(*args, stdin=stdin)
    assert result.code == 0, (args, result)
    return result.out


def table(text: str) -> tuple[list[str], list[list[str]]]:
    """kubectl's printed table: headers and rows (columns are separated by runs of spaces;
    single spaces occur inside headers like NOMINATED NODE)."""
    header, *rows = [line for line in text.splitlines() if line.strip()]
    return re.split(r"\s{2,}", header.strip()), [row.split() for row in rows]


async def test_kubectl_drives_a_simulated_member(kubectl: Kubectl) -> None:
    assert await ok(kubectl, "get", "--raw", "/readyz") == "ok"

    headers, rows = table(await ok(kubectl, "get", "nodes"))
    assert headers == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [row[:3] for row in rows] == [["member1-node-1", "Ready", "<none>"], ["member1-node-2", "Ready", "<none>"]]
    assert rows[0][4] == "v1.31.0"

    assert "deployment.apps/web created" in await ok(kubectl, "apply", "-f", "-", stdin=DEPLOYMENT)
    assert "condition met" in await ok(kubectl, "wait", "--for=condition=Available", "deployment/web",
                                       "--timeout=15s")
    headers, rows = table(await ok(kubectl, "get", "deployments"))
    assert headers == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[0][:4] == ["web", "2/2", "2", "2"]
    headers, rows = table(await ok(kubectl, "get", "pods", "-o", "wide"))
    assert headers == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                       "READINESS GATES"]
    assert len(rows) == 2 and all(row[1:4] == ["1/1", "Running", "0"] for row in rows)

    # Default validation: the server advertises fieldValidation, so kubectl asks for Strict.
    unknown = DEPLOYMENT.replace("image: nginx:1.27", "image: nginx:1.27\n        colour: blue")
    rejected = await kubectl("apply", "-f", "-", stdin=unknown)
    assert rejected.code != 0
    assert 'strict decoding error: unknown field "spec.template.spec.containers[0].colour"' in rejected.err
    # A kind the member does not serve: kubectl's usual answer, not a validation failure.
    policy = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\n"
    missing = await kubectl("apply", "-f", "-", stdin=policy)
    assert missing.code != 0 and 'no matches for kind "PropagationPolicy"' in missing.err, missing
    # A changed manifest is patched from the OpenAPI schemas (a strategic merge patch).
    changed = DEPLOYMENT.replace("nginx:1.27", "nginx:1.28")
    assert "deployment.apps/web configured" in await ok(kubectl, "apply", "-f", "-", stdin=changed)

    assert "deployment.apps/web scaled" in await ok(kubectl, "scale", "deployment/web", "--replicas=3")
    await ok(kubectl, "wait", "--for=jsonpath={.status.readyReplicas}=3", "deployment/web", "--timeout=15s")
    described = await ok(kubectl, "describe", "deployment", "web")
    assert re.search(r"Replicas:\s+3 desired \| 3 updated \| 3 total \| 3 available", described), described
    assert re.search(r"Image:\s+nginx:1.28", described), described

    resources = await ok(kubectl, "api-resources")
    assert re.search(r"^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$", resources, re.M), resources

    assert 'deployment.apps "web" deleted' in await ok(kubectl, "delete", "deployment", "web")
    gone = await kubectl("get", "deployments")
    assert gone.code == 0 and "No resources found in default namespace." in gone.err


async def test_kubectl_get_watch_sees_a_change(kubectl: Kubectl) -> None:
    await ok(kubectl, "apply", "-f", "-", stdin=DEPLOYMENT)
    await ok(kubectl, "wait", "--for=condition=Available", "deployment/web", "--timeout=15s")
    watching = await kubectl.spawn("get", "deployments", "--watch")
    assert watching.stdout is not None

    async def line_matching(pattern: str) -> str:
        while True:
            line = (await watching.stdout.readline()).decode()  # type: ignore[union-attr]
            assert line, "kubectl get --watch ended"
            if re.search(pattern, line):
                return line

    try:
        async with asyncio.timeout(20):
            assert re.split(r"\s{2,}", (await line_matching(r"^NAME")).strip())[:3] == ["NAME", "READY", "UP-TO-DATE"]
            await line_matching(r"^web\s+2/2\s")
            await ok(kubectl, "scale", "deployment/web", "--replicas=1")
            await line_matching(r"^web\s+1/1\s")
    finally:
        watching.kill()
        await watching.wait()
