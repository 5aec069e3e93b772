"""`python -m sim`: serve simulated member clusters until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from flotilla.runtime.clock import RealClock
from flotilla.runtime.flags import duration
from flotilla.store.connect import make_client
from flotilla.store.endpoints import Endpoint, Registration
from sim.catalog import CRD, crd_document, plural_of
from sim.errors import ApiError
from sim.server import SimServer

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
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
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


async def serve(args: argparse.Namespace) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stopping.set)
    server = SimServer(RealClock(), args.data_dir, host=args.host, pod_ready_delay=args.pod_ready_delay,
                       nodes=args.nodes, node_cpu=args.node_cpu, node_memory=args.node_memory,
                       node_pods=args.node_pods)
    for name in args.cluster_names:
        cluster = server.add_cluster(name)
        for document in args.crd_documents:
            try:
                cluster.state.create(CRD, "", document)
            except ApiError as e:
                raise ValueError(f"--crds: {e.message}") from e
    await server.start(args.port)
    registration = etcd = None
    try:
        if args.etcd_endpoints:
            etcd = make_client(args.etcd_endpoints)
            await etcd.connect()
            registration = Registration(etcd, Endpoint(
                service="sim", id=f"{socket.gethostname()}-{os.getpid()}", address=server.address,
                pid=os.getpid(), started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                # Not a gRPC server: status tools check it over HTTP at this path.
                extra={"data_dir": args.data_dir, "protocol": "http", "health": "/admin/clusters"},
            ))
            await registration.start()
        log.info("event=serving address=%s clusters=%d kubeconfigs=%s", server.address, len(server.clusters),
                 server.data_dir / "kubeconfigs")
        print(f"sim serving {len(server.clusters)} clusters over HTTPS, one port each (kubeconfigs in "
              f"{server.data_dir / 'kubeconfigs'}; admin http://{server.address}/admin/clusters)", flush=True)
        await stopping.wait()
    finally:
        if registration is not None:
            await registration.close()
        if etcd is not None:
            await etcd.close()
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args))
    except (OSError, ValueError) as e:  # port in use, bad CRD, bad cluster name or quantity
        print(f"sim: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
