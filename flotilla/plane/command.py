"""`flotilla`: run the whole control plane on one machine (up, down, sim fault, demo, bench).

Running the plane is flotilla/plane/local_plane.py; `flotilla demo` is flotilla/plane/demo.py,
`flotilla bench` the benchmarks of flotilla/plane/benchmarks/.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from flotilla.api.errors import UserError, short
from flotilla.plane import demo, etcd_access
from flotilla.plane.local_plane import (
    DEFAULT_DATA_DIR,
    DEFAULT_WAIT_TIMEOUT,
    LocalControlPlane,
    RunState,
    UpError,
    forget_plane,
    service_env,
    terminate,
)
from flotilla.plane.profiles import PROFILES
from flotilla.runtime.flags import feature_gates
from flotilla.security import context as ctx
from flotilla.security import tls
from flotilla.store import Store, StoreError
from flotilla.store.connect import channel_target
from flotilla.store.embedded import EtcdError


def _resolve_data_dir(given: str | None) -> Path:
    """`--data-dir`, else ./.flotilla when a plane runs from there, else the current context's."""
    if given:
        return Path(given)
    default = Path(DEFAULT_DATA_DIR)
    if RunState.path(default).exists():
        return default
    try:
        current = ctx.current_data_dir()
    except UserError:
        current = None
    return current if current is not None else default


def down(data_dir: Path) -> int:
    state = RunState.load(data_dir)
    if state is None:
        forget_plane(data_dir)
        print(f"nothing to stop: no {RunState.path(data_dir)}")
        return 0
    terminate(list(state.services.values()))
    etcd = state.etcd_pids or ([state.etcd_pid] if state.etcd_pid else [])
    terminate(etcd)
    forget_plane(data_dir)
    print(f"stopped {len(state.services)} services" + (" and etcd" if etcd else ""))
    return 0


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
                              sim_nodes=args.sim_nodes, sim_node_pods=args.sim_node_pods,
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
    except (UpError, EtcdError, TimeoutError, UserError, StoreError) as e:
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
    from flotilla.plane import simclient
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
            found = await list_endpoints(Store(client, endpoints=endpoints), "sim")
        except Exception as e:  # aetcd raises several unrelated types for "not there"
            raise UpError(f"cannot reach etcd at {endpoints}: {e}") from e
        finally:
            await client.close()
        if not found:
            raise UpError(f"no simulator is registered in etcd at {endpoints} "
                          "(start one with `flotilla up --sim-clusters N`)")
        mine = [e for e in found if sim_dir and e.extra.get("data_dir") == sim_dir]
        endpoint = (mine or found)[0]
        address = endpoint.address
        # The admin token is in the simulator's data dir, which its record names (when that is on
        # this machine; else simclient looks where FLOTILLA_SIM_TOKEN_FILE or the context says).
        recorded = endpoint.extra.get("data_dir", "")
        token_dir = recorded if recorded and simclient.token_file(recorded).exists() else None
        try:
            if args.fault in APP_FAULTS:
                await simclient.set_app_fault(address, args.cluster, args.namespace, args.name,
                                          healthy=args.fault == "app-recover", kind=args.kind, data_dir=token_dir)
            else:
                await simclient.set_fault(address, args.cluster, args.fault, latency=args.latency, data_dir=token_dir)
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
    p_up.add_argument("--sim-nodes", type=positive_int, default=3, metavar="N",
                      help="nodes of each simulated member (default %(default)s)")
    p_up.add_argument("--sim-node-pods", type=positive_int, default=110, metavar="N",
                      help="pods each simulated node takes (default %(default)s, a kubelet's default): a member "
                           "holds nodes x pods replicas")
    p_up.add_argument("--profile", choices=sorted(PROFILES), default="default",
                      help="timings: Karmada's defaults, or demo (failover within seconds)")
    p_up.add_argument("--feature-gates", type=feature_gates, default={}, metavar="NAME=BOOL,...",
                      help="feature gates for every service that has them, e.g. StatefulFailoverInjection=true")
    p_up.add_argument("--replicas", type=positive_int, default=1, metavar="N",
                      help="processes of every service: the executor, scheduler, eviction service and taint manager "
                           "divide their work among them; of the rest one leads and the others stand by")
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
    from flotilla.plane.benchmarks import failover as bench_failover
    p_bench = sub.add_parser("bench", help="benchmarks of the whole plane, printing JSON").add_subparsers(
        dest="bench_command", required=True)
    bench_failover.add_arguments(p_bench.add_parser("failover", help="take a loaded member down; time the failover"))
    etcd_access.add_arguments(sub.add_parser(
        "etcd-auth", help="turn etcd auth on: each service its own etcd user and role (deploy/k8s)"))
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
        if args.command == "etcd-auth":
            return etcd_access.run(args)
        if args.command == "demo":
            return demo.run(args)
        if args.command == "bench":
            from flotilla.plane.benchmarks import failover as bench_failover
            return bench_failover.main(args)
        return down(_resolve_data_dir(args.data_dir))
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if args.debug:
            raise
        from flotilla.plane.benchmarks.failover import BenchError
        expected = (UpError, EtcdError, OSError, UserError, StoreError, TimeoutError, ValueError, BenchError)
        text = short(e) if isinstance(e, expected) else f"{type(e).__name__}: {short(e)} (--debug shows more)"
        print(f"flotilla {args.command}: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
