"""`flotilla`: run the whole control plane on one machine.

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

import argparse
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

from flotilla import demo
from flotilla.cli.errors import CLIError, short
from flotilla.profiles import PROFILES
from flotilla.runtime.flags import feature_gates
from flotilla.security import context as ctx
from flotilla.security import crypto, tls
from flotilla.store import StoreError
from flotilla.store.connect import channel_target
from flotilla.store.embedded import EtcdCluster, EtcdError, free_port, port_is_free

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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate(pids: list[int], timeout: float = 10.0) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in pids:
        while _pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if _pid_alive(pid):
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
                 encryption_key_file: Path | None = None) -> None:
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
        if previous and any(_pid_alive(p) for p in [previous.etcd_pid, *previous.etcd_pids,
                                                    *previous.services.values()] if p):
            raise UpError(
                f"already running from {self.data_dir} (run `flotilla down --data-dir {self.data_dir}` first)"
            )

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        previous = RunState.load(self.data_dir)
        self._secure()
        if not self.external_etcd:
            port = self.etcd_port or (DEFAULT_ETCD_PORT if port_is_free(DEFAULT_ETCD_PORT) else free_port())
            if not port_is_free(port):
                raise UpError(f"etcd port {port} is taken")
            self.etcd = EtcdCluster(self.data_dir / "etcd", self.etcd_members, client_port=port,
                                    tls=self.certificates.get("etcd"))
            self.etcd.start(detach=self.detach)
        for name in SERVICES:
            for instance in self.instances(name):
                self._spawn(instance, "-m", f"services.{name}", "--data-dir", str(self.data_dir))
        if self.sim_clusters:
            previous_port = previous.sim_port if previous else 0
            self.sim_port = previous_port if previous_port and port_is_free(previous_port) else free_port()
            delay = self.extra_env.get("FLOTILLA_POD_READY_DELAY")
            self._spawn("sim", "-m", "sim", "--port", str(self.sim_port), "--clusters", str(self.sim_clusters),
                        "--data-dir", str(self.sim_dir), "--etcd-endpoints", self.endpoints,
                        *(["--pod-ready-delay", delay] if delay else []))
        self._save()

    def _secure(self) -> None:
        """Certificates for every process (unless --insecure) and the encryption key file; this
        process (which joins members and waits for the plane) then calls as `admin`."""
        if not self.key_file.exists():
            crypto.new_key_file(self.key_file)
        if not self.insecure:
            processes = [*SERVICES, *(f"agent-{m}" for m in self.member_names)]
            names = ["etcd", "sim", *(i for name in processes for i in self.instances(name))]
            self.certificates = tls.plane_certificates(self.data_dir / "pki", names, *(self.ca or ()))
        os.environ.update({crypto.ENV_KEY_FILE: str(self.key_file.resolve()), **self._tls_env("admin")})

    def _tls_env(self, name: str) -> dict[str, str]:
        # An etcd of the user's (--etcd-endpoints) is reached with the user's FLOTILLA_ETCD_* settings.
        return tls.process_env(self.certificates.get(name), etcd=not self.external_etcd)

    def context(self) -> ctx.Context:
        """What `flotillactl` needs to use this plane: etcd, the admin certificate, the key file."""
        admin = self.certificates.get("admin")
        return ctx.Context(etcd_endpoints=self.endpoints, data_dir=str(self.data_dir.resolve()),
                           sim_address=f"127.0.0.1:{self.sim_port}" if self.sim_port else "",
                           tls_ca=admin.ca if admin else "", tls_cert=admin.cert if admin else "",
                           tls_key=admin.key if admin else "", encryption_key_file=str(self.key_file.resolve()))

    def instances(self, service: str) -> list[str]:
        """The process names of a service's replicas (each elects, so one leads, the rest stand by)."""
        return [service] if self.replicas == 1 else [f"{service}-{i}" for i in range(1, self.replicas + 1)]

    @property
    def sim_dir(self) -> Path:
        return self.data_dir / "sim"

    def _spawn(self, name: str, *args: str) -> None:
        logs = self.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        env = {**os.environ, **self.extra_env, "FLOTILLA_ETCD_ENDPOINTS": self.endpoints,
               **self._tls_env(name)}
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
                        "--data-dir", str(self.data_dir))
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

    def wait_serving_also(self, services: list[str], timeout: float = 60.0) -> None:
        from flotilla.cli.status import wait_for_services

        asyncio.run(wait_for_services(self.endpoints, services, timeout, instances=self.replicas))

    def stop(self) -> None:
        _terminate([p.pid for p in self.processes.values()])
        if self.etcd is not None:
            self.etcd.stop()


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


def _resolve_data_dir(given: str | None) -> Path:
    """`--data-dir`, else ./.flotilla when a plane runs from there, else the current context's."""
    if given:
        return Path(given)
    default = Path(DEFAULT_DATA_DIR)
    if RunState.path(default).exists():
        return default
    try:
        current = ctx.current_data_dir()
    except CLIError:
        current = None
    return current if current is not None else default


def forget_plane(data_dir: Path) -> None:
    """What `down` and a stopped foreground `up` leave behind: no run state, no context."""
    RunState.path(data_dir).unlink(missing_ok=True)
    ctx.Context.remove(data_dir)
    ctx.clear_current_if(data_dir)


def down(data_dir: Path) -> int:
    state = RunState.load(data_dir)
    if state is None:
        forget_plane(data_dir)
        print(f"nothing to stop: no {RunState.path(data_dir)}")
        return 0
    _terminate(list(state.services.values()))
    etcd = state.etcd_pids or ([state.etcd_pid] if state.etcd_pid else [])
    _terminate(etcd)
    forget_plane(data_dir)
    print(f"stopped {len(state.services)} services" + (" and etcd" if etcd else ""))
    return 0


def service_env(profile: str, gates: dict[str, bool]) -> dict[str, str]:
    """The `FLOTILLA_<FLAG>` values every process gets: the profile's timings, and the feature
    gates (each service with a `--feature-gates` flag picks the ones it knows)."""
    env = dict(PROFILES[profile])
    if gates:
        env["FLOTILLA_FEATURE_GATES"] = ",".join(f"{k}={str(v).lower()}" for k, v in gates.items())
    return env


def up(args: argparse.Namespace) -> int:
    if bool(args.ca_cert) != bool(args.ca_key):
        raise UpError("--ca-cert and --ca-key go together")
    ca = (Path(args.ca_cert), Path(args.ca_key)) if args.ca_cert else None
    if args.etcd_endpoints:
        if args.etcd_members != 1:
            raise UpError("--etcd-members: only for the embedded etcd; --etcd-endpoints names an etcd of your own")
        channel_target(args.etcd_endpoints)  # before anything starts: endpoints no client can dial
    plane = LocalControlPlane(Path(args.data_dir or DEFAULT_DATA_DIR), args.etcd_endpoints, args.etcd_port, args.detach,
                              extra_env=service_env(args.profile, args.feature_gates), sim_clusters=args.sim_clusters,
                              replicas=args.replicas, etcd_members=args.etcd_members, insecure=args.insecure, ca=ca,
                              encryption_key_file=Path(args.encryption_key_file) if args.encryption_key_file else None)
    # Before anything is started, and outside the clean-up below: a plane already running
    # from this directory is not ours to stop.
    plane.ensure_not_running()
    try:
        plane.start()
        plane.wait_serving()
        plane.join_members()
        if plane.sim_clusters >= 3:
            plane.wait_serving_also([f"agent-member{plane.sim_clusters}"])
        plane.wait_clusters_ready(args.wait_timeout)
        plane.record_context()
    except (UpError, EtcdError, TimeoutError, CLIError, StoreError) as e:
        plane.stop()
        forget_plane(plane.data_dir)
        raise UpError(short(e) + f" (logs: {plane.data_dir / 'logs'})") from e
    except KeyboardInterrupt:
        plane.stop()
        forget_plane(plane.data_dir)
        raise
    print(f"export FLOTILLA_ETCD_ENDPOINTS={plane.endpoints}")
    if args.detach:
        return 0
    print("Flotilla is running; Ctrl-C stops it.", flush=True)
    stop = False

    def request_stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, request_stop)
    try:
        while not stop:
            for name, proc in plane.processes.items():
                if proc.poll() is not None:
                    print(f"service {name} exited with code {proc.returncode}", file=sys.stderr)
                    stop = True
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    plane.stop()
    forget_plane(plane.data_dir)
    return 0


CLUSTER_FAULTS = ("down", "unhealthy", "unreachable", "slow", "recover")
APP_FAULTS = ("app-unhealthy", "app-recover")


def sim_fault(args: argparse.Namespace) -> int:
    """`flotilla sim fault CLUSTER FAULT`: the simulator is found through etcd, like every service;
    etcd from --etcd-endpoints, else --data-dir's context, else FLOTILLA_ETCD_ENDPOINTS, else the
    current context."""
    from flotilla import simclient
    from flotilla.store.connect import make_client
    from flotilla.store.endpoints import list_endpoints

    if args.fault in APP_FAULTS and not (args.namespace and args.name):
        raise UpError(f"{args.fault} needs --namespace and --name of the workload")
    endpoints = ctx.resolve_endpoints(args.etcd_endpoints, args.data_dir)
    # The plane's own simulator when we know its data dir (several may share one etcd).
    data_dir = Path(args.data_dir) if args.data_dir else None
    if data_dir is None and not args.etcd_endpoints and not os.environ.get(ctx.ENV_ENDPOINTS):
        data_dir = ctx.current_data_dir()
    sim_dir = str((data_dir / "sim").resolve()) if data_dir else None

    # That plane's client certificate, unless the environment names one.
    context = ctx.Context.load(data_dir) if data_dir and not args.etcd_endpoints else None
    plane_tls = context.tls() if context and not tls.from_env(tls.ENV_ETCD_CA, tls.ENV_ETCD_CERT,
                                                                 tls.ENV_ETCD_KEY) else None

    async def run() -> None:
        client = make_client(endpoints, timeout=5, tls=plane_tls)
        try:
            found = await list_endpoints(client, "sim")
        except Exception as e:  # aetcd raises several unrelated types for "not there"
            raise UpError(f"cannot reach etcd at {endpoints}: {e}") from e
        finally:
            await client.close()
        if not found:
            raise UpError(f"no simulator is registered in etcd at {endpoints} "
                          "(start one with `flotilla up --sim-clusters N`)")
        mine = [e for e in found if sim_dir and e.extra.get("data_dir") == sim_dir]
        address = (mine or found)[0].address
        try:
            if args.fault in APP_FAULTS:
                await simclient.set_app_fault(address, args.cluster, args.namespace, args.name,
                                          healthy=args.fault == "app-recover", kind=args.kind)
            else:
                await simclient.set_fault(address, args.cluster, args.fault, latency=args.latency)
        except simclient.AdminError as e:
            raise UpError(str(e)) from e

    asyncio.run(run())
    target = f"{args.namespace}/{args.name} in {args.cluster}" if args.fault in APP_FAULTS else args.cluster
    print(f"{target}: {args.fault}")
    return 0


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flotilla", description="Run the Flotilla control plane.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start etcd and every service")
    p_up.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p_up.add_argument("--etcd-endpoints", default=None, help="use this etcd instead of an embedded one")
    p_up.add_argument("--etcd-port", type=int, default=None,
                      help="port for the embedded etcd (default 2379, or a free one)")
    p_up.add_argument("--detach", action="store_true", help="return once every service is SERVING")
    p_up.add_argument("--sim-clusters", type=int, default=0,
                      help="start a simulator with member1..memberN joined (the last in Pull mode when N >= 3)")
    p_up.add_argument("--profile", choices=sorted(PROFILES), default="default",
                      help="timings: Karmada's defaults, or demo (failover within seconds)")
    p_up.add_argument("--feature-gates", type=feature_gates, default={}, metavar="NAME=BOOL,...",
                      help="feature gates for every service that has them, e.g. StatefulFailoverInjection=true")
    p_up.add_argument("--replicas", type=positive_int, default=1, metavar="N",
                      help="processes of every service, each leader-elected: one leads, the others stand by")
    p_up.add_argument("--etcd-members", type=positive_int, default=1, metavar="N",
                      help="members of the embedded etcd, each with its own ports and data dir (e.g. 3)")
    p_up.add_argument("--wait-timeout", type=float, default=DEFAULT_WAIT_TIMEOUT, metavar="SECONDS",
                      help="how long to wait for every simulated cluster to be Ready (default %(default)gs)")
    p_up.add_argument("--insecure", action="store_true",
                      help="plain gRPC and etcd on loopback instead of mutual TLS with a local CA")
    p_up.add_argument("--ca-cert", default=None, help="sign the plane's certificates with this CA (with --ca-key) "
                      "instead of the one kept in <data-dir>/pki")
    p_up.add_argument("--ca-key", default=None, help="the key of --ca-cert")
    p_up.add_argument("--encryption-key-file", default=None,
                      help="keys that encrypt Secrets in etcd (default: <data-dir>/encryption-keys.yaml, made "
                           "when missing)")
    p_down = sub.add_parser("down", help="stop what `up --detach` started")
    p_down.add_argument("--data-dir", default=None,
                        help=f"default: {DEFAULT_DATA_DIR} if a plane runs from there, else the current context's")
    demo.register(sub)
    from flotilla.benchmarks import failover as bench_failover
    p_bench = sub.add_parser("bench", help="benchmarks of the whole plane, printing JSON").add_subparsers(
        dest="bench_command", required=True)
    bench_failover.add_arguments(p_bench.add_parser("failover", help="take a loaded member down; time the failover"))
    p_sim = sub.add_parser("sim", help="the member-cluster simulator")
    sim_sub = p_sim.add_subparsers(dest="sim_command", required=True)
    p_fault = sim_sub.add_parser("fault", help="inject or clear a fault in a simulated cluster")
    p_fault.add_argument("cluster")
    p_fault.add_argument("fault", choices=[*CLUSTER_FAULTS, *APP_FAULTS])
    p_fault.add_argument("--latency", type=float, default=None, help="seconds added to every request (slow)")
    p_fault.add_argument("--namespace", "-n", default="", help="workload namespace (app faults)")
    p_fault.add_argument("--name", default="", help="workload name (app faults)")
    p_fault.add_argument("--kind", default=None, help="workload kind (app faults; default: any)")
    p_fault.add_argument("--etcd-endpoints", default=None,
                         help="etcd URLs (default: --data-dir's plane, else FLOTILLA_ETCD_ENDPOINTS, "
                              "else the current context)")
    p_fault.add_argument("--data-dir", default=None, help="the data dir of the plane whose simulator to use")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "up":
            return up(args)
        if args.command == "sim":
            return sim_fault(args)
        if args.command == "demo":
            return demo.run(args)
        if args.command == "bench":
            from flotilla.benchmarks import failover as bench_failover
            return bench_failover.main(args)
        return down(_resolve_data_dir(args.data_dir))
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.debug:
            raise
        from flotilla.benchmarks.failover import BenchError
        expected = (UpError, EtcdError, OSError, CLIError, StoreError, TimeoutError, ValueError, BenchError)
        text = short(e) if isinstance(e, expected) else f"{type(e).__name__}: {short(e)} (--debug shows more)"
        print(f"flotilla {args.command}: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
