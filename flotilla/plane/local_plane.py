"""A control plane on one machine: what `flotilla up` starts and `flotilla down` stops
(the command itself is flotilla/plane/command.py).

`flotilla up` starts an embedded etcd (unless `--etcd-endpoints` names one)
and every service as its own process, over mutual TLS with certificates of a CA
it keeps in `<data-dir>/pki/` (flotilla.security.tls; `--insecure` for plain loopback),
with Secrets encrypted in etcd by a key file it makes (flotilla.security.crypto);
`--detach` leaves them running and records them in `<data-dir>/run.json` so
`flotilla down` can stop them.
Once the plane is ready (every service SERVING, every simulated cluster
joined and Ready) it records where it is in `<data-dir>/context.json` and makes
it the current context (see flotilla.security.context), which `flotillactl` and
`flotilla sim` use when no endpoint is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flotilla.plane import simclient
from flotilla.plane.profiles import PROFILES
from flotilla.security import agents, crypto, rbac, tls
from flotilla.security import context as ctx
from flotilla.store.embedded import EtcdCluster, free_port, port_is_free

# Every service that exists so far, in start order. The list grows as services land.
SERVICES = ["webhook", "status", "taint_manager", "scheduler", "eviction", "executor"]

DEFAULT_ETCD_PORT = 2379
DEFAULT_DATA_DIR = "./.flotilla"
DEFAULT_WAIT_TIMEOUT = 120.0


class UpError(RuntimeError):
    pass


@dataclass
class RunState:
    """What `up --detach` started, for `down`."""

    etcd_endpoints: str
    etcd_pid: int = 0  # the first member's, as before there were several
    etcd_pids: list[int] = field(default_factory=list)
    services: dict[str, int] = field(default_factory=dict)
    sim_port: int = 0
    # Each webhook replica's port: the plane's API, where Pull agents and tools call it.
    api_ports: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def path(data_dir: Path) -> Path:
        return data_dir / "run.json"

    def save(self, data_dir: Path) -> None:
        self.path(data_dir).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, data_dir: Path) -> RunState | None:
        try:
            return cls(**json.loads(cls.path(data_dir).read_text()))
        except FileNotFoundError:
            return None


def running(pid: int) -> bool:
    """Whether the process still runs. One that has exited but is not reaped yet has stopped: a
    plane started with --detach leaves its processes to init, which reaps them when it gets to
    it (seconds later, in some sandboxes), and waiting for that made every `down` seconds slower."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:  # no /proc (not Linux), or gone meanwhile
        return False
    # The state follows the command name, which is in parentheses and may hold anything.
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def terminate(pids: list[int], timeout: float = 10.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids:
        while running(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if running(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


class LocalControlPlane:
    def __init__(self, data_dir: Path, etcd_endpoints: str | None, etcd_port: int | None,
                 detach: bool, extra_env: dict[str, str] | None = None, sim_clusters: int = 0,
                 replicas: int = 1, etcd_members: int = 1,
                 insecure: bool = False, ca: tuple[Path, Path] | None = None,
                 encryption_key_file: Path | None = None, sim_nodes: int = 3, sim_node_pods: int = 110) -> None:
        self.insecure = insecure
        self.ca = ca
        self.certificates: dict[str, tls.TLSFiles] = {}
        self.key_file = encryption_key_file or data_dir / "encryption-keys.yaml"
        self.data_dir = data_dir
        self.external_etcd = etcd_endpoints
        self.etcd_port = etcd_port
        self.detach = detach
        self.extra_env = extra_env or {}
        self.sim_clusters = sim_clusters
        self.sim_port = 0
        self.sim_nodes, self.sim_node_pods = sim_nodes, sim_node_pods
        self.api_ports: dict[str, int] = {}
        self.replicas = replicas
        self.etcd_members = etcd_members
        self.etcd: EtcdCluster | None = None
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def endpoints(self) -> str:
        if self.external_etcd:
            return self.external_etcd
        assert self.etcd is not None
        return self.etcd.endpoint

    def ensure_not_running(self) -> None:
        previous = RunState.load(self.data_dir)
        if previous and any(running(p) for p in [previous.etcd_pid, *previous.etcd_pids,
                                                    *previous.services.values()] if p):
            raise UpError(
                f"already running from {self.data_dir} (run `flotilla down --data-dir {self.data_dir}` first)"
            )

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        previous = RunState.load(self.data_dir)
        self._secure()
        # Where this plane's simulator writes its admin token, for this process's own calls
        # (flotilla.plane.simclient: the demo's faults, a benchmark's), as it takes the key file.
        os.environ[simclient.ENV_TOKEN_FILE] = str(simclient.token_file(self.sim_dir.resolve()))
        if not self.external_etcd:
            port = self.etcd_port or (DEFAULT_ETCD_PORT if port_is_free(DEFAULT_ETCD_PORT) else free_port())
            if not port_is_free(port):
                raise UpError(f"etcd port {port} is taken")
            self.etcd = EtcdCluster(self.data_dir / "etcd", self.etcd_members, client_port=port,
                                    tls=self.certificates.get("etcd"))
            self.etcd.start(detach=self.detach)
            if not self.insecure:
                self._restrict_etcd()
            self._seal_stored()
        self._choose_api_ports(previous)
        for name in SERVICES:
            for instance in self.instances(name):
                self._spawn(instance, "-m", f"services.{name}", "--data-dir", str(self.data_dir),
                            *self._service_args(instance, name))
        if self.sim_clusters:
            previous_port = previous.sim_port if previous else 0
            self.sim_port = previous_port if previous_port and port_is_free(previous_port) else free_port()
            delay = self.extra_env.get("FLOTILLA_POD_READY_DELAY")
            self._spawn("sim", "-m", "sim", "--port", str(self.sim_port), "--clusters", str(self.sim_clusters),
                        "--data-dir", str(self.sim_dir), "--etcd-endpoints", self.endpoints,
                        "--nodes", str(self.sim_nodes), "--node-pods", str(self.sim_node_pods),
                        *(["--pod-ready-delay", delay] if delay else []))
        self._save()

    def _secure(self) -> None:
        """Certificates for every process (unless --insecure) and the encryption key file; this
        process (which joins members and waits for the plane) then calls as `admin`."""
        if not self.key_file.exists():
            crypto.new_key_file(self.key_file)
        if not self.insecure:
            serving = self.serving_processes()
            ca_cert, ca_key = self.ca or (None, None)
            self.certificates = tls.plane_certificates(
                self.data_dir / "pki", ["etcd", "sim", *serving], ca_cert, ca_key,
                services={instance: [service] for instance, service in serving.items()}, clients=["sim"],
                identities={instance: service for instance, service in serving.items()
                            if service.startswith(agents.USER_PREFIX)},
                groups={instance: [agents.GROUP if service.startswith(agents.USER_PREFIX) else rbac.SERVICES_GROUP]
                        for instance, service in serving.items()})
        os.environ.update({crypto.ENV_KEY_FILE: str(self.key_file.resolve()), **self._tls_env("admin")})

    def _restrict_etcd(self) -> None:
        """etcd auth on, each process its own user with its service's role (flotilla.security.etcd_roles):
        a service's certificate reads and writes only what its work needs; `admin` is root."""
        from flotilla.store import etcd_auth
        from flotilla.store.connect import make_client

        async def enable() -> None:
            client = make_client(self.endpoints, tls=self.certificates["admin"])
            try:
                await client.connect()
                # Each process's role is the service it serves (etcd_roles names them alike). Pull
                # agents have no etcd user: they go through the plane's API.
                services = {p: s for p, s in self.serving_processes().items() if s in SERVICES}
                await etcd_auth.enable(client, {**services, "sim": "sim"}, admins=["admin"])
            finally:
                await client.close()

        asyncio.run(enable())

    def _seal_stored(self) -> None:
        """Secrets and Works an older Flotilla left in plaintext in this data dir's etcd, sealed with
        the key file before any service starts: the services refuse plaintext (it could be a
        downgrade), and this is the one moment an upgrade can be done for the user."""
        rewritten = asyncio.run(seal_plaintext(self.endpoints, self.certificates.get("admin"), self.key_file))
        if rewritten:
            print(f"sealed {rewritten} Secrets and Works stored in plaintext by an older version", flush=True)

    def serving_processes(self) -> dict[str, str]:
        """Each process that serves, by its name (its identity), with the service it serves: every
        service's replicas and every Pull agent's (`agent-<cluster>`)."""
        processes = [*SERVICES, *(f"agent-{m}" for m in self.member_names)]
        return {instance: name for name in processes for instance in self.instances(name)}

    def _choose_api_ports(self, previous: RunState | None) -> None:
        """A fixed port per webhook replica, kept from the last run when free: agents and the
        context find the plane's API there, across restarts of the webhook."""
        before = previous.api_ports if previous else {}
        for instance in self.instances("webhook"):
            port = before.get(instance, 0)
            self.api_ports[instance] = port if port and port_is_free(port) else free_port()

    @property
    def api_address(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.api_ports.values())

    def _service_args(self, instance: str, service: str) -> list[str]:
        if service != "webhook":
            return []
        # Without TLS no caller has an identity for RBAC to authorize.
        mode = ["--authorization-mode", "AlwaysAllow"] if self.insecure else []
        return ["--audit-log-path", str(self.data_dir / "logs" / "audit.log"), *mode,
                "--listen-address", f"127.0.0.1:{self.api_ports[instance]}"]

    def _agent_args(self, instance: str) -> list[str]:
        """A Pull agent calls the plane's API with its client certificate, never etcd."""
        args = ["--api-address", self.api_address]
        files = self.certificates.get(instance + tls.CLIENT_SUFFIX)
        if files is not None:
            args += ["--api-ca", files.ca, "--api-cert", files.cert, "--api-key", files.key]
        return args

    def _tls_env(self, name: str) -> dict[str, str]:
        # An etcd of the user's (--etcd-endpoints) is reached with the user's FLOTILLA_ETCD_* settings.
        return tls.process_env(self.certificates.get(name), etcd=not self.external_etcd,
                               etcd_files=self.certificates.get(name + tls.CLIENT_SUFFIX))

    def context(self) -> ctx.Context:
        """What `flotillactl` needs to use this plane: etcd, the admin certificate, the key file."""
        admin = self.certificates.get("admin")
        return ctx.Context(etcd_endpoints=self.endpoints, data_dir=str(self.data_dir.resolve()),
                           sim_address=f"127.0.0.1:{self.sim_port}" if self.sim_port else "",
                           tls_ca=admin.ca if admin else "", tls_cert=admin.cert if admin else "",
                           tls_key=admin.key if admin else "", encryption_key_file=str(self.key_file.resolve()),
                           api_address=self.api_address)

    def instances(self, service: str) -> list[str]:
        """The process names of a service's replicas (`<service>-<i>`; the service's own name alone)."""
        return [service] if self.replicas == 1 else [f"{service}-{i}" for i in range(1, self.replicas + 1)]

    @property
    def sim_dir(self) -> Path:
        return self.data_dir / "sim"

    def _spawn(self, name: str, *args: str, etcd: bool = True) -> None:
        logs = self.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        env = {**os.environ, **self.extra_env, "FLOTILLA_ETCD_ENDPOINTS": self.endpoints, **self._tls_env(name)}
        if not etcd:
            for variable in ("FLOTILLA_ETCD_ENDPOINTS", tls.ENV_ETCD_CA, tls.ENV_ETCD_CERT, tls.ENV_ETCD_KEY):
                env.pop(variable, None)
        with open(logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=self.detach,
            )

    def _save(self) -> None:
        RunState(
            etcd_endpoints=self.endpoints,
            etcd_pid=self.etcd.pids[0] if self.etcd and self.etcd.pids else 0,
            etcd_pids=self.etcd.pids if self.etcd else [],
            services={n: p.pid for n, p in self.processes.items()},
            sim_port=self.sim_port,
            api_ports=self.api_ports,
        ).save(self.data_dir)

    def join_members(self) -> None:
        """Join member1..memberN from the simulator (the last in Pull mode, with its agent, when N >= 3)."""
        if not self.sim_clusters:
            return
        from flotilla.cli.join import join_args, join_cluster
        from flotilla.store import Store

        names = self.member_names
        pull = names[-1] if len(names) >= 3 else None

        async def join_all() -> None:
            store = await Store.connect(self.endpoints)
            try:
                for name in names:
                    kubeconfig = str(self.sim_dir / "kubeconfigs" / f"{name}.yaml")
                    mode = "Pull" if name == pull else "Push"
                    await join_cluster(store, join_args(name, kubeconfig, mode), rejoin=True)
            finally:
                await store.close()

        asyncio.run(join_all())
        for instance in self.instances(f"agent-{pull}") if pull else []:
            self._spawn(instance, "-m", "services.executor", "--mode", "agent", "--cluster", str(pull),
                        "--kubeconfig", str(self.sim_dir / "kubeconfigs" / f"{pull}.yaml"),
                        "--data-dir", str(self.data_dir), *self._agent_args(instance), etcd=False)
        self._save()

    def wait_serving(self, timeout: float = 60.0) -> None:
        from flotilla.cli.status import wait_for_services

        def check_alive() -> None:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise UpError(f"service {name} exited with code {proc.returncode}; "
                                  f"see {self.data_dir / 'logs' / (name + '.log')}")

        asyncio.run(wait_for_services(self.endpoints, SERVICES, timeout, check_alive, instances=self.replicas))
        if self.sim_clusters:
            asyncio.run(wait_for_services(self.endpoints, ["sim"], timeout, check_alive))

    @property
    def member_names(self) -> list[str]:
        return [f"member{i}" for i in range(1, self.sim_clusters + 1)]

    def wait_clusters_ready(self, timeout: float) -> None:
        """Return once every simulated cluster is Ready and free of the health taints that keep
        the scheduler off it; a policy applied after `up` then sees the whole fleet."""
        if not self.sim_clusters:
            return

        def check_alive() -> None:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise UpError(f"{name} exited with code {proc.returncode}; "
                                  f"see {self.data_dir / 'logs' / (name + '.log')}")

        asyncio.run(wait_clusters_ready(self.endpoints, self.member_names, timeout, check_alive))

    def record_context(self) -> Path:
        """Write `<data-dir>/context.json` and make this plane the current context."""
        self.context().save()
        return ctx.set_current(self.data_dir.resolve())

    def wait_serving_also(self, services: list[str], timeout: float = 60.0, instances: int | None = None) -> None:
        """Wait for processes started beside the plane's services: `instances` of each (default:
        as many as each service has replicas, as Pull agents do)."""
        from flotilla.cli.status import wait_for_services

        asyncio.run(wait_for_services(self.endpoints, services, timeout,
                                      instances=self.replicas if instances is None else instances))

    def stop(self) -> None:
        terminate([p.pid for p in self.processes.values()])
        if self.etcd is not None:
            self.etcd.stop()


async def seal_plaintext(endpoints: str, admin: tls.TLSFiles | None, key_file: Path) -> int:
    """Seal with `key_file` every Secret and Work stored otherwise; how many were rewritten."""
    from flotilla.security.crypto import configured_keys
    from flotilla.store import Store

    store = await Store.connect(endpoints, tls=admin, keys=configured_keys(str(key_file)))
    try:
        rewritten, _ = await store.rewrite_secrets()
    finally:
        await store.close()
    return rewritten


def cluster_not_ready(cluster: object | None) -> str:
    """Why a cluster is not yet usable for scheduling, or "" when it is: Ready=True and none
    of the health taints (which the taint manager lifts just after Ready turns True)."""
    from flotilla.api.clusters import cluster_not_ready_reason
    from flotilla.api.taints import TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE

    if cluster is None:
        return "not joined"
    why = cluster_not_ready_reason(cluster)  # type: ignore[arg-type]
    if why is not None:
        return why
    taints = [t.key for t in cluster.spec.taints  # type: ignore[attr-defined]
              if t.key in (TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE)]
    return f"Ready, still tainted {', '.join(taints)}" if taints else ""


async def wait_clusters_ready(endpoints: str, names: list[str], timeout: float,
                              check: Callable[[], None] = lambda: None) -> None:
    """Poll the Cluster objects until each named one is Ready and untainted; a TimeoutError
    naming those that are not, and why, after `timeout` seconds."""
    from flotilla.api import registry
    from flotilla.store import Store

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    store = await Store.connect(endpoints)
    try:
        while True:
            check()
            clusters = {c.metadata.name: c for c in (await store.list(registry.CLUSTER)).items}
            waiting = {n: why for n in names if (why := cluster_not_ready(clusters.get(n)))}
            if not waiting:
                return
            if loop.time() > deadline:
                raise TimeoutError(f"clusters not Ready after {timeout:.0f}s: "
                                   + "; ".join(f"{n} ({why})" for n, why in waiting.items()))
            # Status and taints are written by other processes: poll the store.
            await asyncio.sleep(0.2)
    finally:
        await store.close()


def forget_plane(data_dir: Path) -> None:
    """What `down` and a stopped foreground `up` leave behind: no run state, no context."""
    RunState.path(data_dir).unlink(missing_ok=True)
    ctx.Context.remove(data_dir)
    ctx.clear_current_if(data_dir)


def service_env(profile: str, gates: dict[str, bool]) -> dict[str, str]:
    """The `FLOTILLA_<FLAG>` values every process gets: the profile's timings, and the feature
    gates (each service with a `--feature-gates` flag picks the ones it knows)."""
    env = dict(PROFILES[profile])
    if gates:
        env["FLOTILLA_FEATURE_GATES"] = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
    return env
