"""What authorizing a request costs; prints one JSON object.

- evaluate_us: one RBAC decision (flotilla.security.rbac) in a policy of --bindings RoleBindings
  (each of its own user and namespace): `allowed` is granted by the last binding read, `denied`
  reads every one; the best of five rounds of --decisions decisions, per decision.
- rebuild_ms: reading that many stored RoleBindings into a policy (once per change of any).
- apply_ms: `Apply` of a new ConfigMap through a real webhook process on a real etcd, as
  `flotillactl apply` calls it (mutual TLS, the admin certificate), p50 and p99 over --applies
  sequential applies, with `--authorization-mode RBAC` (and its audit log to a file) and with
  `AlwaysAllow` (no audit log): the difference is what authorization adds to an apply.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flotilla.api import codec
from flotilla.api.v1 import webhook_pb2, webhook_pb2_grpc
from flotilla.plane.benchmarks import ROOT, arguments
from flotilla.plane.benchmarks.stats import summary
from flotilla.security import rbac, tls
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.endpoints import list_endpoints

SMOKE = {"bindings": 10, "decisions": 100, "applies": 5}


def role_binding(i: int) -> dict[str, Any]:
    return {"apiVersion": rbac.API_VERSION, "kind": "RoleBinding",
            "metadata": {"name": f"team-{i}-edit", "namespace": f"team-{i}"},
            "subjects": [{"kind": "User", "name": f"user-{i}"}],
            "roleRef": {"apiGroup": rbac.GROUP, "kind": "ClusterRole", "name": "edit"}}


def evaluation(bindings: int, decisions: int) -> dict[str, Any]:
    docs = [codec.to_dict(codec.from_dict(role_binding(i))) for i in range(bindings)]
    started = time.perf_counter()
    policy = rbac.Policy([], [rbac.binding_of(d) for d in docs])
    rebuild = time.perf_counter() - started
    last = bindings - 1
    asks = {
        "allowed": (rbac.User.of(f"user-{last}"), rbac.Request("create", "apps", "deployments", f"team-{last}")),
        "denied": (rbac.User.of("nobody"), rbac.Request("create", "apps", "deployments", f"team-{last}")),
    }
    per_decision = {}
    for which, (user, request) in asks.items():
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(decisions):
                policy.authorize(user, request)
            rounds.append((time.perf_counter() - started) / decisions)
        per_decision[which] = round(min(rounds) * 1e6, 1)
    return {"evaluate_us": per_decision, "rebuild_ms": round(rebuild * 1000, 2)}


def start_webhook(etcd: EmbeddedEtcd, certificates: dict[str, tls.TLSFiles], directory: Path,
                  mode: str) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True)
    env = {**os.environ, **tls.process_env(certificates["webhook"], etcd_files=certificates["webhook-client"])}
    audit = ["--audit-log-path", str(directory / "audit.log")] if mode == "RBAC" else ["--audit-log-path", ""]
    with open(directory / "webhook.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "services.webhook", "--etcd-endpoints", etcd.endpoint, "--metrics-port", "-1",
             "--data-dir", str(directory), "--authorization-mode", mode, *audit],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


async def applies(etcd: EmbeddedEtcd, admin: tls.TLSFiles, process: subprocess.Popen[bytes], count: int,
                  prefix: str) -> list[float]:
    store = await Store.connect(etcd.endpoint)
    try:
        async with asyncio.timeout(60):
            while not (found := [e for e in await list_endpoints(store, "webhook") if e.pid == process.pid]):
                if process.poll() is not None:
                    raise RuntimeError(f"the webhook exited with code {process.returncode}")
                # A child process gives no readiness signal to await: poll its registration.
                await asyncio.sleep(0.05)
    finally:
        await store.close()
    latencies = []
    async with tls.grpc_channel(found[0].address, admin, tls.service_server_name("webhook")) as channel:
        stub = webhook_pb2_grpc.WebhookStub(channel)
        for i in range(count + 1):
            doc = {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": f"{prefix}-{i}", "namespace": "default"}, "data": {"i": str(i)}}
            started = time.perf_counter()
            response = await stub.Apply(webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)), timeout=30)
            if i:  # the first pays for the connection and the authorizer's first read
                latencies.append((time.perf_counter() - started) * 1000)
            if not response.allowed:
                raise RuntimeError(f"apply refused: {response.violations}")
    return latencies


def apply_latency(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="flotilla-bench-authorization-") as tmp:
        directory = Path(tmp)
        certificates = tls.plane_certificates(directory / "pki", ["etcd", "webhook"],
                                              services={"webhook": ["webhook"]})
        admin = certificates["admin"]
        saved = dict(os.environ)
        os.environ.update(tls.process_env(admin))
        etcd = EmbeddedEtcd(directory / "etcd", tls=certificates["etcd"])
        etcd.start()
        try:
            found = {}
            for mode in ("RBAC", "AlwaysAllow"):
                process = start_webhook(etcd, certificates, directory / mode, mode)
                try:
                    found[mode] = summary(asyncio.run(applies(etcd, admin, process, count, mode.lower())), digits=2)
                finally:
                    process.terminate()
                    process.wait(15)
            return found
        finally:
            etcd.stop()
            os.environ.clear()
            os.environ.update(saved)


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--bindings", type=int, default=1000, help="RoleBindings in the policy")
    parser.add_argument("--decisions", type=int, default=10_000, help="decisions per timed round")
    parser.add_argument("--applies", type=int, default=200, help="sequential applies per mode")
    args = arguments.parse(parser, SMOKE)
    print(json.dumps({"bindings": args.bindings, **evaluation(args.bindings, args.decisions),
                      "applies": args.applies, "apply_ms": apply_latency(args.applies)}))


if __name__ == "__main__":
    main()
