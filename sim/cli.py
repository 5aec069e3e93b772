"""`python -m sim`: serve simulated member clusters until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvloop
import yaml

from flotilla.aio.clock import RealClock
from flotilla.plane.simclient import TOKEN_FILE
from flotilla.runtime.flags import duration
from flotilla.store import Store
from flotilla.store.connect import make_client
from flotilla.store.endpoints import Endpoint, Registration
from sim.admin_api import read_token
from sim.catalog import CRD, crd_document, plural_of
from sim.collection import keep_full_collections_short
from sim.errors import ApiError
from sim.server import SimServer
from sim.shards import ShardedSim
from sim.waiting import wait_first

log = logging.getLogger("sim")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0,
                        help="port of the admin API (0 = any); each cluster gets an HTTPS port of its own")
    parser.add_argument("--clusters", type=int, default=3, help="serve member1..memberN")
    parser.add_argument("--names", default="", help="comma-separated cluster names (instead of member1..N)")
    parser.add_argument("--data-dir", required=True, help="kubeconfigs are written to DATA_DIR/kubeconfigs/")
    parser.add_argument("--etcd-endpoints", default=None, help="register as service 'sim' in this etcd")
    parser.add_argument("--pod-ready-delay", type=duration, default=duration("2s"),
                        help="time from a pod's scheduling to Ready (Go duration)")
    parser.add_argument("--nodes", type=int, default=3, help="nodes per cluster")
    parser.add_argument("--node-cpu", default="8", help="allocatable cpu per node")
    parser.add_argument("--node-memory", default="32Gi", help="allocatable memory per node")
    parser.add_argument("--node-pods", type=int, default=110, help="pod slots per node")
    parser.add_argument("--crds", default="",
                        help="CRDs to install in every cluster: comma-separated group/version/Kind[/plural][:Cluster] "
                             "or paths to YAML files of CustomResourceDefinitions")
    parser.add_argument("--processes", type=int, default=1,
                        help="serve the clusters from this many processes, each with a share of them (the admin "
                             "API stays on --port and routes to the right one)")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="event loop: uvloop (libuv; its TLS and sockets cost less per request) or asyncio's own")
    parser.add_argument("--log-level", default="INFO")
    # A process of a sharded simulator: its number (names its serving certificate).
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    # Registered in etcd for tools started elsewhere, so it must not depend on our cwd.
    args.data_dir = str(Path(args.data_dir).resolve())
    if args.names:
        args.cluster_names = [n.strip() for n in args.names.split(",") if n.strip()]
    else:
        if args.clusters < 0:
            parser.error("--clusters must not be negative")
        args.cluster_names = [f"member{i}" for i in range(1, args.clusters + 1)]
    try:
        args.crd_documents = crd_documents(args.crds)
    except ValueError as e:
        parser.error(str(e))
    return args


def crd_documents(text: str) -> list[dict[str, Any]]:
    """CRD manifests from --crds: `group/version/Kind[/plural][:Cluster]` items or YAML files."""
    documents = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        path = Path(item)
        if path.is_file():
            try:
                loaded = [d for d in yaml.safe_load_all(path.read_text()) if d]
            except yaml.YAMLError as e:
                raise ValueError(f"--crds {item}: not valid YAML: {e}") from e
            bad = [d for d in loaded if not isinstance(d, dict) or d.get("kind") != CRD.kind]
            if bad:
                raise ValueError(f"--crds {item}: every document must be a CustomResourceDefinition")
            documents.extend(loaded)
            continue
        spec, _, scope = item.partition(":")
        parts = spec.split("/")
        if len(parts) not in (3, 4) or not all(parts) or scope not in ("", "Cluster", "Namespaced"):
            raise ValueError(f"--crds {item!r}: use group/version/Kind[/plural][:Cluster] or a YAML file path")
        group, version, kind = parts[:3]
        plural = parts[3] if len(parts) == 4 else plural_of(kind)
        documents.append(crd_document(group, version, kind, plural, namespaced=scope != "Cluster"))
    return documents


def child_args(args: argparse.Namespace) -> list[str]:
    """The options each process of a sharded simulator shares with the parent (cluster names,
    ports and registration are the parent's to give)."""
    return ["--host", args.host, "--port", "0", "--data-dir", args.data_dir,
            "--pod-ready-delay", f"{args.pod_ready_delay}s", "--nodes", str(args.nodes),
            "--node-cpu", args.node_cpu, "--node-memory", args.node_memory, "--node-pods", str(args.node_pods),
            "--crds", args.crds, "--loop", args.loop, "--log-level", args.log_level]


def _stop_on_signals(stopping: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)


async def _single(args: argparse.Namespace) -> SimServer:
    # A child of a sharded simulator answers its parent, which wrote the admin token before starting
    # it (sim/shards.py); a simulator of its own writes a fresh one (sim/admin_api.py).
    token = read_token(Path(args.data_dir)) if args.child is not None else None
    server = SimServer(RealClock(), args.data_dir, host=args.host, pod_ready_delay=args.pod_ready_delay,
                       nodes=args.nodes, node_cpu=args.node_cpu, node_memory=args.node_memory,
                       node_pods=args.node_pods,
                       serving_cert="serving" if args.child is None else f"serving-{args.child}",
                       admin_token=token)
    for name in args.cluster_names:
        cluster = server.add_cluster(name)
        for document in args.crd_documents:
            try:
                cluster.state.create(CRD, "", document)
            except ApiError as e:
                raise ValueError(f"--crds: {e.message}") from e
    await server.start(args.port)
    return server


async def _serve_child(args: argparse.Namespace) -> None:
    """One process of a sharded simulator: serves its clusters, tells the parent its admin address
    on stdout, and stops on SIGTERM or when stdin closes (the parent is gone)."""
    stopping = asyncio.Event()
    _stop_on_signals(stopping)
    server = await _single(args)
    try:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        print(json.dumps({"admin": server.address}), flush=True)
        await wait_first(reader.read(), stopping.wait())
    finally:
        await server.stop()


async def serve(args: argparse.Namespace) -> None:
    if args.child is not None:
        await _serve_child(args)
        return
    stopping = asyncio.Event()
    _stop_on_signals(stopping)
    sharded: ShardedSim | None = None
    if args.processes > 1:
        sharded = ShardedSim(child_args(args), args.cluster_names, args.processes, Path(args.data_dir), args.host)
        await sharded.start(args.port)
        address, clusters = sharded.address, len(sharded.owner)
        server: SimServer | None = None
    else:
        server = await _single(args)
        address, clusters = server.address, len(server.clusters)
    kubeconfigs = Path(args.data_dir) / "kubeconfigs"
    registration = etcd = None
    try:
        if args.etcd_endpoints:
            etcd = make_client(args.etcd_endpoints)
            await etcd.connect()
            registration = Registration(Store(etcd, endpoints=args.etcd_endpoints), Endpoint(
                service="sim", id=f"{socket.gethostname()}-{os.getpid()}", address=address,
                pid=os.getpid(), started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                # Not a gRPC server: status tools check it over HTTP at this path.
                extra={"data_dir": args.data_dir, "protocol": "http", "health": "/admin/clusters"},
            ))
            await registration.start()
        log.info("event=serving address=%s clusters=%d processes=%d kubeconfigs=%s", address, clusters,
                 args.processes, kubeconfigs)
        print(f"sim serving {clusters} clusters over HTTPS, one port each, from {args.processes} "
              f"process{'es' if args.processes > 1 else ''} (kubeconfigs in {kubeconfigs}; "
              f"admin http://{address}/admin/clusters, changes with the token in "
              f"{Path(args.data_dir) / TOKEN_FILE})", flush=True)
        if sharded is None:
            await stopping.wait()
        else:
            await wait_first(stopping.wait(), sharded.watch_children())
    finally:
        if registration is not None:
            await registration.close()
        if etcd is not None:
            await etcd.close()
        if server is not None:
            await server.stop()
        if sharded is not None:
            await sharded.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    keep_full_collections_short()
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop if args.loop == "uvloop" else None) as runner:
            runner.run(serve(args))
    except (OSError, ValueError) as e:  # port in use, bad CRD, bad cluster name or quantity
        print(f"sim: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
