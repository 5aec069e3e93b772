"""Many simulated clusters in one process: each cluster's Kubernetes API on its own HTTPS port
(sim/listeners.py), and the fault-injection API (`/admin/...`) over plain HTTP on the main port.

Cheap per cluster by construction: one app and runner for every cluster port, one timer task for
every cluster, and no per-cluster tasks or polling.
"""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

from aiohttp import web

from flotilla.aio.clock import Clock
from sim import kube_api, watch
from sim.admin_api import admin_routes, write_token
from sim.cluster import DEFAULT_VERSION, SimCluster
from sim.errors import UNAUTHORIZED
from sim.kubeconfig import existing_port, existing_token, write_kubeconfig
from sim.listeners import ClusterListeners
from sim.timers import Timers
from sim.tls import Authority, serving_hosts
from sim.turns import Turns

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_MAX_BODY = 3 * 1024 * 1024  # the API server's request size limit
_HEALTH = frozenset({"readyz", "healthz", "livez"})


class SimServer:
    def __init__(self, clock: Clock, data_dir: str | Path, *, host: str = "127.0.0.1", pod_ready_delay: float = 2.0,
                 nodes: int = 3, node_cpu: str = "8", node_memory: str = "32Gi", node_pods: int = 110,
                 git_version: str = DEFAULT_VERSION, serving_cert: str = "serving",
                 admin_token: str | None = None) -> None:
        self.clock = clock
        self.data_dir = Path(data_dir)
        self.host = host
        self.pod_ready_delay = pod_ready_delay
        self.defaults = {"nodes": nodes, "cpu": node_cpu, "memory": node_memory, "pods": node_pods}
        self.git_version = git_version
        self.serving_cert = serving_cert  # file name in <data-dir>/pki of this process's certificate
        self.clusters: dict[str, SimCluster] = {}
        self.timers = Timers(clock)
        self.port = 0
        self.tls: Authority | None = None  # made at start
        # The admin API's token (sim/admin_api.py): written to <data-dir>/admin-token at every start,
        # unless given (a sharded simulator's child takes its parent's).
        self._given_token = admin_token
        self.admin_token = admin_token or ""
        self._runner: web.AppRunner | None = None
        self._listeners = ClusterListeners(host, self._serve_cluster, _MAX_BODY)
        self._stopping = asyncio.Event()
        self._turns = Turns()

    @property
    def address(self) -> str:
        """host:port of the server (what the etcd registration and the admin client use)."""
        return f"{self.host}:{self.port}"

    def url(self, name: str) -> str:
        """The cluster's API server URL (known once the server has started)."""
        return self.clusters[name].url

    def kubeconfig_path(self, name: str) -> Path:
        return self.data_dir / "kubeconfigs" / f"{name}.yaml"

    def cluster(self, name: str) -> SimCluster:
        return self.clusters[name]

    def add_cluster(self, name: str, nodes: int | None = None, cpu: str | None = None, memory: str | None = None,
                    pods: int | None = None) -> SimCluster:
        """A new cluster with `nodes` nodes of `cpu`/`memory`/`pods` each (server defaults when
        left out); its kubeconfig is written as soon as the server has a port."""
        if not _NAME.match(name):
            raise ValueError(f"cluster name {name!r} must be a DNS label (lowercase letters, digits, '-')")
        if name in self.clusters:
            raise ValueError(f"cluster {name!r} already exists")
        cluster = SimCluster(
            name, self.clock, self.timers, token=existing_token(self.kubeconfig_path(name)),
            pod_ready_delay=self.pod_ready_delay,
            nodes=self.defaults["nodes"] if nodes is None else nodes,
            cpu=str(cpu or self.defaults["cpu"]), memory=str(memory or self.defaults["memory"]),
            pods=int(self.defaults["pods"] if pods is None else pods), git_version=self.git_version,
        )
        if self._runner is not None:
            self._publish(cluster)
        self.clusters[name] = cluster
        return cluster

    async def start(self, port: int = 0) -> None:
        self.admin_token = self._given_token or write_token(self.data_dir)
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_routes(admin_routes(self))
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, port))
            await web.SockSite(runner, sock).start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = sock.getsockname()[1]
        self._stopping.clear()
        try:
            self.tls = Authority(self.data_dir / "pki", serving_hosts(self.host), self.serving_cert)
            await self._listeners.start(self.tls.server_context())
            for cluster in self.clusters.values():
                self._publish(cluster)
            await self._listeners.ready()
        except BaseException:
            await self.stop()
            raise
        self.timers.start()

    async def ready(self) -> None:
        """Wait until every cluster added so far is being served."""
        await self._listeners.ready()

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        # Held requests ("unreachable", "slow") end first, so shutdown does not wait for them.
        self._stopping.set()
        await self.timers.stop()
        await self._listeners.stop()
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _publish(self, cluster: SimCluster) -> None:
        assert self.tls is not None
        kubeconfig = self.kubeconfig_path(cluster.name)
        # The port of an earlier run's kubeconfig, so joined clients (which stored it) keep working.
        port = self._listeners.open(cluster.name, existing_port(kubeconfig),
                                    hint=f"delete {kubeconfig} to give it a new port, then join it again")
        cluster.url = f"https://{_url_host(self.host)}:{port}"
        cluster.kubeconfig = kubeconfig
        write_kubeconfig(kubeconfig, cluster.name, cluster.url, cluster.token, self.tls.ca_data)

    async def _serve_cluster(self, request: web.Request) -> web.StreamResponse:
        name = self._listeners.cluster_of(request)
        cluster = self.clusters.get(name) if name else None
        if cluster is None:
            return web.Response(status=404, text="404 page not found\n")
        if not await cluster.faults.admit(self.clock, self._stopping):
            return _drop(request)
        if not kube_api.authorized(request, cluster):
            return kube_api.error_response(UNAUTHORIZED)
        request[watch.STOPPING] = self._stopping  # open watches end when the server does
        if request.path.split("/", 2)[1] not in _HEALTH:
            await self._turns.take()  # health probes never queue behind other requests' work
        return await kube_api.handle(request, cluster, request.path)


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _drop(request: web.Request) -> web.Response:
    """Close the connection without answering (the response below is never sent)."""
    if request.transport is not None:
        request.transport.close()
    return web.Response(status=503)
