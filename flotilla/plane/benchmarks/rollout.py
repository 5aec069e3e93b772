"""Rollout benchmark: `flotilla up` plus a simulator whose members are joined in Push mode (each
with 3 nodes of `--node-pods` pod slots, so every replica fits), then N Deployments each
propagated to every member (Duplicated, one replica), from the first apply to every binding
reporting every member Healthy; prints one JSON object. The objects reach admission as
`flotillactl apply -f` sends them, in ApplyBatch requests (`--apply unary`: one Apply each).

- wall_s: from the first apply to the last placement Healthy (or `--timeout`, with the
  Healthy/Unhealthy/Unknown counts where it stood).
- webhook/executor/sim/etcd: each one's CPU seconds over the rollout, and peak RSS (with
  `--sim-processes N`, summed over the simulator's processes; the webhook's over its replicas).
- readyz_ms: p50/p99/max of the simulator's `/readyz`, asked by a separate prober process one
  cluster after another (every `--probe-interval`) for the whole rollout, each over a connection
  kept alive since a warm-up round (as a control plane's prober keeps one per member), so a
  probe times the request and not a TCP and TLS handshake.
- reference_readyz_ms: the same prober asking an idle one-cluster simulator (a process of its
  own, the same code and event loop) after each probe of the loaded one: what the machine's
  load alone costs a probe (the prober's own scheduling included), against which to read
  readyz_ms on a machine shared with other work.

    python -m flotilla.plane.benchmarks.rollout --clusters 10 --deployments 1000
    python -m flotilla.plane.benchmarks.rollout --clusters 100 --deployments 100 [--sim-processes 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from flotilla.api import registry
from flotilla.api.v1 import webhook_pb2
from flotilla.cli.webhook_client import WebhookClient
from flotilla.plane.benchmarks import ROOT, arguments
from flotilla.plane.benchmarks.readyz_probe import Target, targets
from flotilla.plane.benchmarks.resources import lifetime_peak_rss_mib
from flotilla.plane.benchmarks.stats import summary
from flotilla.plane.local_plane import RunState
from flotilla.security.context import Context
from flotilla.security.crypto import ENV_KEY_FILE
from flotilla.security.tls import process_env
from flotilla.store import Informer, Store
from flotilla.store.embedded import free_port

# The checkout, where the processes this benchmark starts run.

BIN = Path(sys.executable).parent
NAMESPACE = "bench"
# How the objects reach the webhook (--apply).
BATCH, UNARY = "batch", "unary"
SMOKE = {"clusters": 1, "deployments": 2, "timeout": 120.0, "node_pods": 10}


def deployment(i: int) -> dict[str, Any]:
    name = f"app-{i:05d}"
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"bench": "rollout"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def policy(clusters: int) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "rollout", "namespace": NAMESPACE},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "labelSelector": {"matchLabels": {"bench": "rollout"}}}],
                     "placement": {"clusterAffinity": {"clusterNames": [f"member{i}" for i in range(1, clusters + 1)]},
                                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_children(pid: int) -> list[int]:
    """`pid` and its child processes (a sharded simulator's)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *(int(c) for c in children)]


# -- the /readyz prober (a process of its own, so the benchmark's own work does not skew it) --

PROBER_READY = "ready"


async def probe(targets: list[Target], reference: Target, interval: float) -> None:
    """Asks each simulated cluster's /readyz in turn, and an idle reference simulator's after each."""
    import aiohttp

    latencies: dict[str, list[float]] = {"sim": [], "reference": [], "warm-up": []}
    failures = {"sim": 0, "reference": 0, "warm-up": 0}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    # Only now may it be stopped: a SIGTERM before the handler would kill it before it reports.
    print(PROBER_READY, flush=True)

    async def ask(session: aiohttp.ClientSession, which: str, target: Target) -> None:
        server, token, tls = target
        started = time.perf_counter()
        try:
            async with session.get(f"{server}/readyz", headers={"Authorization": f"Bearer {token}"},
                                   ssl=tls if tls is not None else True) as r:
                await r.read()
                if r.status != 200:
                    failures[which] += 1
            latencies[which].append((time.perf_counter() - started) * 1000)
        except (aiohttp.ClientError, TimeoutError):
            failures[which] += 1

    # One kept-alive connection per cluster, as a control plane's health prober has: a probe times
    # the request, not a TCP and TLS handshake (which the warm-up round pays for).
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=3600)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10), connector=connector) as session:
        for target in [*targets, reference]:
            await ask(session, "warm-up", target)
        i = 0
        while not stop.is_set():
            await ask(session, "sim", targets[i % len(targets)])
            await ask(session, "reference", reference)
            i += 1
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass
    print(json.dumps({which: {"probes": len(found), "failures": failures[which], **summary(found, digits=2)}
                      for which, found in latencies.items() if which != "warm-up"}))


# -- the rollout ----------------------------------------------------------------------------

def placements(bindings: Informer[Any], clusters: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for rb in bindings.list():
        seen = {item.cluster_name: item.health or "Unknown" for item in rb.status.aggregated_status}
        for i in range(1, clusters + 1):
            counts[seen.get(f"member{i}", "Unknown")] += 1
    return counts


async def rollout(endpoint: str, clusters: int, deployments: int, timeout: float,
                  pids: dict[str, list[int]], mode: str = BATCH) -> dict[str, Any]:
    store = await Store.connect(endpoint)
    bindings: Informer[Any] = Informer(store, registry.RESOURCE_BINDING, namespace=NAMESPACE)
    watching = asyncio.create_task(bindings.run())
    await bindings.wait_synced()
    webhook = WebhookClient(store)
    one_at_a_time = asyncio.Semaphore(16)

    async def apply_each(doc: dict[str, Any]) -> None:
        async with one_at_a_time:
            response = await webhook.call(lambda s: s.Apply,
                                          webhook_pb2.AdmissionRequest(object_json=json.dumps(doc)))
            if not response.allowed:
                raise RuntimeError(f"apply refused: {response}")

    async def apply(docs: list[dict[str, Any]]) -> None:
        if mode == UNARY:
            await asyncio.gather(*(apply_each(doc) for doc in docs))
            return
        # Through ApplyBatch, as `flotillactl apply -f DIRECTORY` sends them: the Deployments are
        # independent of one another, so two requests are in flight at once.
        results = await webhook.apply_batch([json.dumps(doc).encode() for doc in docs], in_flight=2)
        refused = [r for r in results if r.error_code or not r.response.allowed]
        if refused:
            raise RuntimeError(f"apply refused {len(refused)} of {len(docs)}: {refused[0]}")

    def cpu(name: str) -> float:
        return sum(cpu_seconds(pid) for pid in pids[name])

    cpu_before = {name: cpu(name) for name in pids}
    started = time.perf_counter()
    await apply([policy(clusters)])
    await apply([deployment(i) for i in range(deployments)])
    applied_s = time.perf_counter() - started
    total = clusters * deployments
    deadline = started + timeout
    counts: Counter[str] = Counter()
    while time.perf_counter() < deadline:
        counts = placements(bindings, clusters)
        if counts["Healthy"] == total:
            break
        await asyncio.sleep(0.2)
    wall = time.perf_counter() - started
    watching.cancel()
    await webhook.close()
    await store.close()
    return {
        "placements": total, "healthy": counts["Healthy"], "unhealthy": counts["Unhealthy"],
        "unknown": total - counts["Healthy"] - counts["Unhealthy"],
        "all_healthy": counts["Healthy"] == total, "apply_s": round(applied_s, 2), "wall_s": round(wall, 2),
        **{f"{name}_cpu_s": round(cpu(name) - cpu_before[name], 2) for name in pids},
        **{f"{name}_peak_rss_mb": round(sum(lifetime_peak_rss_mib(pid) for pid in group), 1)
           for name, group in pids.items()},
    }


def node_pods(args: argparse.Namespace) -> int:
    """Pod slots per node: as asked, else enough for every Deployment's replica on each member."""
    asked: int = args.node_pods
    return asked or max(400, -(-int(args.deployments) // 3))


def start_sim(args: argparse.Namespace, data_dir: Path, endpoint: str) -> subprocess.Popen[bytes]:
    """The simulator, with pod slots for every placement (`flotilla up`'s has 3 x 110)."""
    return _sim(data_dir, "bench-sim", "--clusters", str(args.clusters), "--data-dir", str(data_dir / "sim"),
                "--etcd-endpoints", endpoint, "--pod-ready-delay", "1s", "--node-pods", str(node_pods(args)),
                "--processes", str(args.sim_processes), "--loop", args.sim_loop)


def start_reference(args: argparse.Namespace, data_dir: Path) -> subprocess.Popen[bytes]:
    """An idle simulator of one cluster, probed alongside the loaded one."""
    return _sim(data_dir, "bench-reference", "--names", "reference", "--data-dir", str(data_dir / "reference"),
                "--loop", args.sim_loop)


def _sim(data_dir: Path, log_name: str, *options: str) -> subprocess.Popen[bytes]:
    with open(data_dir / "logs" / f"{log_name}.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "sim", "--port", str(free_port()), *options],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def wait_for_file(path: Path, timeout: float = 120.0) -> None:
    """Waits for a kubeconfig a simulator process writes once it serves its cluster."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no {path} after {timeout:g}s: see the simulator's log")
        time.sleep(0.1)


async def join_all(endpoint: str, kubeconfigs: Path, names: list[str]) -> None:
    from flotilla.cli.join import join_args, join_cluster
    from flotilla.plane.local_plane import wait_clusters_ready

    store = await Store.connect(endpoint)
    try:
        for name in names:
            await join_cluster(store, join_args(name, str(kubeconfigs / f"{name}.yaml")), rejoin=True)
    finally:
        await store.close()
    await wait_clusters_ready(endpoint, names, 300)


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="flotilla-rollout-") as tmp:
        data_dir = Path(tmp) / "plane"
        port = free_port()
        up = subprocess.run([str(BIN / "flotilla"), "up", "--detach", "--data-dir", str(data_dir), "--etcd-port",
                             str(port), "--profile", args.profile],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
        if up.returncode != 0:
            raise SystemExit(f"flotilla up failed: {up.stderr.strip()}")
        sim: subprocess.Popen[bytes] | None = None
        reference: subprocess.Popen[bytes] | None = None
        prober: subprocess.Popen[str] | None = None
        try:
            state = RunState.load(data_dir)
            context = Context.load(data_dir)
            assert state is not None and context is not None
            # The plane's own certificate and key file for everything this benchmark connects
            # with or starts, whatever the environment names (another plane's, a test session's).
            os.environ.update(process_env(context.tls()))
            if context.encryption_key_file:
                os.environ[ENV_KEY_FILE] = context.encryption_key_file
            sim = start_sim(args, data_dir, state.etcd_endpoints)
            reference = start_reference(args, data_dir)
            kubeconfigs = data_dir / "sim" / "kubeconfigs"
            names = [f"member{i}" for i in range(1, args.clusters + 1)]
            for name in names:
                wait_for_file(kubeconfigs / f"{name}.yaml")
            asyncio.run(join_all(state.etcd_endpoints, kubeconfigs, names))
            pids = {"webhook": [pid for name, pid in state.services.items() if name.startswith("webhook")],
                    "executor": [state.services["executor"]], "sim": with_children(sim.pid),
                    "etcd": state.etcd_pids or [state.etcd_pid]}
            reference_kubeconfig = data_dir / "reference" / "kubeconfigs" / "reference.yaml"
            wait_for_file(reference_kubeconfig)
            prober = subprocess.Popen(
                [sys.executable, "-m", "flotilla.plane.benchmarks.rollout", "--probe", str(kubeconfigs),
                 "--reference", str(reference_kubeconfig), "--probe-interval", str(args.probe_interval)],
                cwd=ROOT, stdout=subprocess.PIPE, text=True)
            assert prober.stdout is not None
            if prober.stdout.readline().strip() != PROBER_READY:
                raise RuntimeError(f"the /readyz prober exited before it started (code {prober.wait()})")
            load_before = os.getloadavg()
            result = asyncio.run(rollout(state.etcd_endpoints, args.clusters, args.deployments, args.timeout, pids,
                                         args.apply))
            prober.send_signal(signal.SIGTERM)
            out, _ = prober.communicate(timeout=30)
            probed = json.loads(out)
            result["readyz_ms"], result["reference_readyz_ms"] = probed["sim"], probed["reference"]
            return {"clusters": args.clusters, "deployments": args.deployments, "apply": args.apply,
                    "sim_processes": args.sim_processes,
                    "sim_loop": args.sim_loop,
                    **result, "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]}
        finally:
            for process in (prober, sim, reference):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
            subprocess.run([str(BIN / "flotilla"), "down", "--data-dir", str(data_dir)], capture_output=True,
                           timeout=120)


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("--profile", default="demo", help="the `flotilla up` timing profile")
    parser.add_argument("--apply", choices=(BATCH, UNARY), default=BATCH,
                        help="batch: the objects through ApplyBatch (500 a request, two requests in flight), as "
                             "`flotillactl apply -f` sends them; unary: one Apply each, 16 in flight (as before)")
    parser.add_argument("--probe-interval", type=float, default=0.05)
    parser.add_argument("--node-pods", type=int, default=0,
                        help="pod slots per simulated node (3 nodes each; default: 400, or room for every "
                             "Deployment's replica when there are more than 1,200)")
    parser.add_argument("--sim-processes", type=int, default=1,
                        help="serve the simulated clusters from this many processes (python -m sim --processes)")
    parser.add_argument("--sim-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the simulator's event loop (python -m sim --loop)")
    parser.add_argument("--probe", default="", help=argparse.SUPPRESS)  # run as the /readyz prober
    parser.add_argument("--reference", default="", help=argparse.SUPPRESS)  # the prober's idle reference
    args = arguments.parse(parser, SMOKE)
    if args.probe:
        asyncio.run(probe(targets(Path(args.probe)), targets(Path(args.reference))[0],
                          args.probe_interval))
        return
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
