"""`flotilla`: run the whole control plane on one machine.

`flotilla up` starts an embedded etcd (unless `--etcd-endpoints` names one)
and every service as its own process; `--detach` leaves them running and
records them in `<data-dir>/run.json` so `flotilla down` can stop them.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flotilla.cli.errors import CLIError
from flotilla.profiles import PROFILES
from flotilla.store.embedded import EmbeddedEtcd, EtcdError, free_port, port_is_free

# Every service that exists so far, in start order. The list grows as services land.
SERVICES = ["webhook", "status", "taint_manager", "scheduler", "executor"]

DEFAULT_ETCD_PORT = 2379


class UpError(RuntimeError):
    pass


@dataclass
class RunState:
    """What `up --detach` started, for `down`."""

    etcd_endpoints: str
    etcd_pid: int = 0
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
                 detach: bool, extra_env: dict[str, str] | None = None, sim_clusters: int = 0) -> None:
        self.data_dir = data_dir
        self.external_etcd = etcd_endpoints
        self.etcd_port = etcd_port
        self.detach = detach
        self.extra_env = extra_env or {}
        self.sim_clusters = sim_clusters
        self.sim_port = 0
        self.etcd: EmbeddedEtcd | None = None
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def endpoints(self) -> str:
        if self.external_etcd:
            return self.external_etcd
        assert self.etcd is not None
        return self.etcd.endpoint

    def ensure_not_running(self) -> None:
        previous = RunState.load(self.data_dir)
        if previous and any(_pid_alive(p) for p in [previous.etcd_pid, *previous.services.values()] if p):
            raise UpError(
                f"already running from {self.data_dir} (run `flotilla down --data-dir {self.data_dir}` first)"
            )

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        previous = RunState.load(self.data_dir)
        if not self.external_etcd:
            port = self.etcd_port or (DEFAULT_ETCD_PORT if port_is_free(DEFAULT_ETCD_PORT) else free_port())
            if not port_is_free(port):
                raise UpError(f"etcd port {port} is taken")
            self.etcd = EmbeddedEtcd(self.data_dir / "etcd", client_port=port)
            self.etcd.start(detach=self.detach)
        for name in SERVICES:
            self._spawn(name, "-m", f"services.{name}", "--data-dir", str(self.data_dir))
        if self.sim_clusters:
            previous_port = previous.sim_port if previous else 0
            self.sim_port = previous_port if previous_port and port_is_free(previous_port) else free_port()
            delay = self.extra_env.get("FLOTILLA_POD_READY_DELAY")
            self._spawn("sim", "-m", "sim", "--port", str(self.sim_port), "--clusters", str(self.sim_clusters),
                        "--data-dir", str(self.sim_dir), "--etcd-endpoints", self.endpoints,
                        *(["--pod-ready-delay", delay] if delay else []))
        self._save()

    @property
    def sim_dir(self) -> Path:
        return self.data_dir / "sim"

    def _spawn(self, name: str, *args: str) -> None:
        logs = self.data_dir / "logs"
        logs.mkdir(exist_ok=True)
        env = {**os.environ, **self.extra_env, "FLOTILLA_ETCD_ENDPOINTS": self.endpoints}
        with open(logs / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=self.detach,
            )

    def _save(self) -> None:
        RunState(
            etcd_endpoints=self.endpoints,
            etcd_pid=self.etcd.process.pid if self.etcd and self.etcd.process else 0,
            services={n: p.pid for n, p in self.processes.items()},
            sim_port=self.sim_port,
        ).save(self.data_dir)

    def join_members(self) -> None:
        """Join member1..memberN from the simulator (the last in Pull mode, with its agent, when N >= 3)."""
        if not self.sim_clusters:
            return
        from flotilla.cli.join import join_args, join_cluster
        from flotilla.store import Store

        names = [f"member{i}" for i in range(1, self.sim_clusters + 1)]
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
        if pull:
            self._spawn(f"agent-{pull}", "-m", "services.executor", "--mode", "agent", "--cluster", pull,
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

        services = [*SERVICES, *(["sim"] if self.sim_clusters else [])]
        asyncio.run(wait_for_services(self.endpoints, services, timeout, check_alive))

    def wait_serving_also(self, services: list[str], timeout: float = 60.0) -> None:
        from flotilla.cli.status import wait_for_services

        asyncio.run(wait_for_services(self.endpoints, services, timeout))

    def stop(self) -> None:
        _terminate([p.pid for p in self.processes.values()])
        if self.etcd is not None:
            self.etcd.stop()


def down(data_dir: Path) -> int:
    state = RunState.load(data_dir)
    if state is None:
        print(f"nothing to stop: no {RunState.path(data_dir)}")
        return 0
    _terminate(list(state.services.values()))
    if state.etcd_pid:
        _terminate([state.etcd_pid])
    RunState.path(data_dir).unlink(missing_ok=True)
    print(f"stopped {len(state.services)} services" + (" and etcd" if state.etcd_pid else ""))
    return 0


def up(args: argparse.Namespace) -> int:
    plane = LocalControlPlane(Path(args.data_dir), args.etcd_endpoints, args.etcd_port, args.detach,
                              extra_env=PROFILES[args.profile], sim_clusters=args.sim_clusters)
    # Before anything is started, and outside the clean-up below: a plane already running
    # from this directory is not ours to stop.
    plane.ensure_not_running()
    try:
        plane.start()
        plane.wait_serving()
        plane.join_members()
        if plane.sim_clusters >= 3:
            plane.wait_serving_also([f"agent-member{plane.sim_clusters}"])
    except (UpError, EtcdError, TimeoutError, CLIError) as e:
        plane.stop()
        RunState.path(Path(args.data_dir)).unlink(missing_ok=True)
        raise UpError(str(e)) from e
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
    RunState.path(Path(args.data_dir)).unlink(missing_ok=True)
    return 0


CLUSTER_FAULTS = ("down", "unhealthy", "unreachable", "slow", "recover")
APP_FAULTS = ("app-unhealthy", "app-recover")


def sim_fault(args: argparse.Namespace) -> int:
    """`flotilla sim fault CLUSTER FAULT`: the simulator is found through etcd, like every service."""
    from flotilla.store.connect import make_client, resolve_endpoints
    from flotilla.store.endpoints import list_endpoints
    from sim import admin

    if args.fault in APP_FAULTS and not (args.namespace and args.name):
        raise UpError(f"{args.fault} needs --namespace and --name of the workload")
    endpoints = resolve_endpoints(args.etcd_endpoints)

    async def run() -> None:
        client = make_client(endpoints, timeout=5)
        try:
            found = await list_endpoints(client, "sim")
        except Exception as e:  # aetcd raises several unrelated types for "not there"
            raise UpError(f"cannot reach etcd at {endpoints}: {e}") from e
        finally:
            await client.close()
        if not found:
            raise UpError(f"no simulator is registered in etcd at {endpoints} "
                          "(start one with `flotilla up --sim-clusters N`)")
        address = found[0].address
        try:
            if args.fault in APP_FAULTS:
                await admin.set_app_fault(address, args.cluster, args.namespace, args.name,
                                          healthy=args.fault == "app-recover", kind=args.kind)
            else:
                await admin.set_fault(address, args.cluster, args.fault, latency=args.latency)
        except admin.AdminError as e:
            raise UpError(str(e)) from e

    asyncio.run(run())
    target = f"{args.namespace}/{args.name} in {args.cluster}" if args.fault in APP_FAULTS else args.cluster
    print(f"{target}: {args.fault}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flotilla", description="Run the Flotilla control plane.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start etcd and every service")
    p_up.add_argument("--data-dir", default="./.flotilla")
    p_up.add_argument("--etcd-endpoints", default=None, help="use this etcd instead of an embedded one")
    p_up.add_argument("--etcd-port", type=int, default=None,
                      help="port for the embedded etcd (default 2379, or a free one)")
    p_up.add_argument("--detach", action="store_true", help="return once every service is SERVING")
    p_up.add_argument("--sim-clusters", type=int, default=0,
                      help="start a simulator with member1..memberN joined (the last in Pull mode when N >= 3)")
    p_up.add_argument("--profile", choices=sorted(PROFILES), default="default",
                      help="timings: Karmada's defaults, or demo (failover within seconds)")
    p_down = sub.add_parser("down", help="stop what `up --detach` started")
    p_down.add_argument("--data-dir", default="./.flotilla")
    p_sim = sub.add_parser("sim", help="the member-cluster simulator")
    sim_sub = p_sim.add_subparsers(dest="sim_command", required=True)
    p_fault = sim_sub.add_parser("fault", help="inject or clear a fault in a simulated cluster")
    p_fault.add_argument("cluster")
    p_fault.add_argument("fault", choices=[*CLUSTER_FAULTS, *APP_FAULTS])
    p_fault.add_argument("--latency", type=float, default=None, help="seconds added to every request (slow)")
    p_fault.add_argument("--namespace", "-n", default="", help="workload namespace (app faults)")
    p_fault.add_argument("--name", default="", help="workload name (app faults)")
    p_fault.add_argument("--kind", default=None, help="workload kind (app faults; default: any)")
    p_fault.add_argument("--etcd-endpoints", default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "up":
            return up(args)
        if args.command == "sim":
            return sim_fault(args)
        return down(Path(args.data_dir))
    except (UpError, EtcdError, OSError) as e:
        if args.debug:
            raise
        print(f"flotilla {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
