"""One call wires a service: flags, logging, tracing, metrics, gRPC with health
and reflection, endpoint registration, leader election, graceful shutdown.

A service describes itself with a `ServiceSpec`; `run(spec)` does the rest.
Leader-only work (the reconcilers) runs in `spec.lead`, started when this
instance becomes leader and cancelled when it stops being one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import grpc
import uvloop
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry import trace

from flotilla.aio.clock import Clock, RealClock
from flotilla.aio.tasks import cancel_and_wait
from flotilla.runtime import profiling
from flotilla.runtime.collection import settle_for_service
from flotilla.runtime.delegated_authorization import AccessReviewer, Authorizing
from flotilla.runtime.flags import apply_env_defaults, duration
from flotilla.runtime.health import ServiceHealth, WithoutReasons
from flotilla.runtime.manager import Manager
from flotilla.runtime.tracing import setup_tracing
from flotilla.security.context import ContextError, etcd_client_tls, resolve_endpoints
from flotilla.security.crypto import configured_keys
from flotilla.security.rbac import Request
from flotilla.security.tls import TLSError, TLSFiles
from flotilla.store import Store, Unavailable
from flotilla.store.base import StoreBase
from flotilla.store.connect import channel_target
from flotilla.store.endpoints import Endpoint, Registration, list_endpoints
from flotilla.store.events import EventQueue
from flotilla.store.leader import LeaderElector
from flotilla.store.remote import RemoteStore
from flotilla.store.shards import ShardCoordinator

log = logging.getLogger(__name__)

# How long a starting service waits for etcd to answer before it exits, naming it: an etcd
# electing a leader (its leader just died) answers nothing for seconds, and a service that exits
# then is one replica fewer until someone restarts it; an endpoint that is wrong still ends it.
STARTUP_PATIENCE = 30.0
_STARTUP_BACKOFF = (0.2, 2.0)
T = TypeVar("T")


@dataclass
class ServiceContext:
    """What a service's servicers and reconcilers are built from. What a service's servicers and
    leader work share (in-memory state to inspect) is typed, on the object whose methods its
    `add_servicers` and `lead` are (e.g. services/status/__main__.py)."""

    name: str
    args: argparse.Namespace
    # etcd, or the plane's API for a process started with --api-address (a Pull agent).
    store: StoreBase
    clock: Clock
    identity: str
    events: EventQueue
    tracer: trace.Tracer
    server: grpc.aio.Server | None = None
    elector: LeaderElector | None = None
    # Set by the runner: the service's gRPC health follows its managers' tasks.
    on_unhealthy: Callable[[str, BaseException], Awaitable[None] | None] | None = None
    on_healthy: Callable[[], Awaitable[None] | None] | None = None
    # Set by the runner: why this replica holds no share of the work now (None: it holds it).
    on_shards: Callable[[str | None], Awaitable[None]] | None = None

    def shard_coordinator(self, shards: Callable[[], Iterable[str]], on_acquire: Callable[[str], Awaitable[None]],
                          on_release: Callable[[str], Awaitable[None]]) -> ShardCoordinator:
        """This replica's part in dividing the service's shards with its other replicas, on a
        lease as long as the leader election's (flotilla.store.shards)."""
        return ShardCoordinator(self.store, self.clock, self.name, self.identity,
                                max(int(self.args.leader_elect_lease_duration), 1), shards, on_acquire, on_release,
                                report=self.on_shards)

    def manager(self, **kwargs: Any) -> Manager:
        """A Manager on this service's store and clock whose failing tasks turn the service
        NOT_SERVING until they are running again."""
        return Manager(self.store, self.clock, on_unhealthy=self.on_unhealthy, on_healthy=self.on_healthy,
                       events=self.events, **kwargs)


@dataclass
class ServiceSpec:
    name: str
    description: str = ""
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    # Registers servicers on the server; returns their full names for reflection.
    add_servicers: Callable[[grpc.aio.Server, ServiceContext], Sequence[str]] | None = None
    # Leader-only work; cancelled on leadership loss or shutdown.
    lead: Callable[[ServiceContext], Awaitable[None]] | None = None
    # Work every replica does, leader or not, for as long as it runs (the executor's share of the
    # member clusters, flotilla.store.shards); started again after a failure.
    share: Callable[[ServiceContext], Awaitable[None]] | None = None
    leader_elect: bool = True
    # The RBAC request each method of its own gRPC API is (full method name -> request): with TLS
    # on, every call is authorized by the webhook first (flotilla.runtime.delegated_authorization).
    access: Mapping[str, Request] = field(default_factory=dict)


def build_parser(spec: ServiceSpec) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m services.{spec.name}", description=spec.description)
    parser.add_argument("--etcd-endpoints", default=None,
                        help="etcd URLs (default: FLOTILLA_ETCD_ENDPOINTS, else the current context "
                             "that `flotilla up` records; no fallback address)")
    parser.add_argument("--listen-address", default="127.0.0.1:0",
                        help="gRPC listen host:port (port 0 = any free port)")
    parser.add_argument("--advertise-address", default="",
                        help="address registered for clients (default: the listen address)")
    parser.add_argument("--metrics-port", type=int, default=0, help="Prometheus port (0 = any free port, -1 = off)")
    parser.add_argument("--metrics-bind-address", default="127.0.0.1",
                        help="address the Prometheus endpoint listens on (default loopback only)")
    parser.add_argument("--tls-cert", default=None, help="this service's certificate (PEM): gRPC is served over "
                        "mutual TLS with --tls-key and --tls-ca")
    parser.add_argument("--tls-key", default=None, help="the key of --tls-cert (PEM)")
    parser.add_argument("--tls-ca", default=None, help="CA bundle that callers' client certificates must chain to")
    parser.add_argument("--health-port", type=int, default=-1,
                        help="also answer grpc.health.v1 (and nothing else) in plain gRPC on this port, on the "
                             "listen host: for probes that cannot present a certificate, as a kubelet's (-1 = off)")
    parser.add_argument("--insecure", action="store_true",
                        help="allow plain gRPC on a non-loopback address (without --tls-*)")
    parser.add_argument("--api-address", default="",
                        help="reach the plane's objects through its API (the webhook's host:port, comma-separated "
                             "for replicas) instead of etcd, as a Pull agent in a member cluster does")
    parser.add_argument("--api-ca", default=None, help="CA bundle of the plane's API (with --api-address)")
    parser.add_argument("--api-cert", default=None, help="client certificate for the plane's API")
    parser.add_argument("--api-key", default=None, help="key of --api-cert")
    parser.add_argument("--etcd-cacert", default=None, help="CA bundle of an https:// etcd")
    parser.add_argument("--etcd-cert", default=None, help="client certificate for an https:// etcd")
    parser.add_argument("--etcd-key", default=None, help="key of --etcd-cert")
    parser.add_argument("--encryption-key-file", default=None,
                        help="keys that encrypt Secrets and Works in etcd (flotilla.security.crypto); without "
                             "one this process refuses to write them (see --allow-plaintext-secrets)")
    parser.add_argument("--allow-plaintext-secrets", action="store_true",
                        help="with no encryption key file, write Secrets and Works to etcd unencrypted (and read "
                             "them back) instead of refusing: for a plane run without encryption on purpose")
    parser.add_argument("--accept-plaintext-secrets", action="store_true",
                        help="read Secrets and Works stored unencrypted, which are refused otherwise: for the "
                             "window in which `flotillactl secrets rewrite` encrypts what is already stored")
    parser.add_argument("--id", default="", help="instance identity (default: <hostname>-<pid>)")
    parser.add_argument("--data-dir", default="", help="local data directory (traces are written here as JSON lines)")
    parser.add_argument("--trace-file", default="", help="append spans as JSON lines to this file")
    parser.add_argument("--leader-elect", default=spec.leader_elect, action=argparse.BooleanOptionalAction)
    parser.add_argument("--leader-elect-lease-duration", type=duration, default=duration("15s"))
    parser.add_argument("--endpoint-ttl", type=duration, default=duration("10s"))
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--event-loop", default="uvloop", choices=["uvloop", "asyncio"],
                        help="the service's event loop: uvloop (libuv's sockets, TLS and timers cost less per "
                             "event) or asyncio's own")
    parser.add_argument("--shutdown-grace", type=duration, default=duration("5s"))
    parser.add_argument("--max-concurrent-rpcs", type=int, default=1024,
                        help="calls (watch streams included) served at once; beyond it a call is refused with "
                             "RESOURCE_EXHAUSTED rather than queued")
    parser.add_argument("--max-message-bytes", type=int, default=4 * 2**20,
                        help="largest gRPC message received (sent: 4 times as large); a larger one is refused")
    parser.add_argument("--event-qps", type=float, default=50.0,
                        help="Events written per second at most, in the background; in a storm they wait, and "
                             "beyond 1,000 waiting they are dropped, never waited for")
    if spec.add_arguments:
        spec.add_arguments(parser)
    apply_env_defaults(parser)
    return parser


def lean_log_records() -> None:
    """Log records without the thread, process and source line, which the format names nowhere
    (the logging HOWTO's "Optimization"): a service logs every decision, thousands of records in
    a failover, and looking those up was a third of the cost of each."""
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    setattr(logging, "_srcfile", None)  # noqa: B010 - the documented switch, absent from the stubs


def main(spec: ServiceSpec, argv: Sequence[str] | None = None) -> int:
    args = build_parser(spec).parse_args(argv)
    try:
        if not args.api_address:
            args.etcd_endpoints = resolve_endpoints(args.etcd_endpoints)
            channel_target(args.etcd_endpoints)  # endpoints no client can dial: refused here, in one line
    except (ContextError, ValueError) as e:
        # Like a bad flag: one line, exit code 2, before anything starts.
        print(f"python -m services.{spec.name}: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(),
        format=f"%(asctime)s %(levelname)s service={spec.name} %(name)s %(message)s",
        stream=sys.stderr,
    )
    lean_log_records()
    try:
        runner = Runner(spec, args)
    except ValueError as e:  # certificate or key files missing or unusable: a bad flag
        print(f"python -m services.{spec.name}: {e}", file=sys.stderr)
        return 2
    settle_for_service()
    profiling.install(spec.name)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop if args.event_loop == "uvloop" else None) as loop:
            loop.run(runner.run())
    except Unavailable as e:
        print(f"{spec.name}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


class Runner:
    def __init__(self, spec: ServiceSpec, args: argparse.Namespace, clock: Clock | None = None) -> None:
        self.spec = spec
        self.args = args
        self.clock = clock or RealClock()
        self.identity = args.id or f"{socket.gethostname()}-{os.getpid()}"
        self.stopping = asyncio.Event()
        self.address = ""
        self.metrics_port = 0
        self.health_port = 0
        self.health = ServiceHealth(spec.name)
        self._background: set[asyncio.Task[None]] = set()
        self.grpc_tls = TLSFiles.given(args.tls_ca, args.tls_cert, args.tls_key, "--tls-ca/--tls-cert/--tls-key")
        host = args.listen_address.rsplit(":", 1)[0]
        if self.grpc_tls is None and not args.insecure and host not in ("127.0.0.1", "localhost", "[::1]"):
            raise TLSError(f"--listen-address {args.listen_address}: serving beyond loopback needs "
                           "--tls-cert, --tls-key and --tls-ca (or --insecure)")
        self.api = [a.strip() for a in args.api_address.split(",") if a.strip()]
        self.api_tls = TLSFiles.given(args.api_ca, args.api_cert, args.api_key, "--api-ca/--api-cert/--api-key")
        self.etcd_tls: TLSFiles | None = None
        if not self.api:
            endpoints = resolve_endpoints(args.etcd_endpoints)
            self.etcd_tls = (TLSFiles.given(args.etcd_cacert, args.etcd_cert, args.etcd_key,
                                            "--etcd-cacert/--etcd-cert/--etcd-key") or etcd_client_tls(endpoints))
        # Through the API Secrets arrive decrypted: only a process on etcd holds the key.
        self.keys = configured_keys(args.encryption_key_file) if not self.api else None

    async def _store(self) -> StoreBase:
        if self.api:
            return RemoteStore(self.api, self.api_tls, self.clock)
        return await Store.connect(resolve_endpoints(self.args.etcd_endpoints), self.clock, self.etcd_tls, self.keys,
                                   allow_plaintext=self.args.allow_plaintext_secrets,
                                   accept_plaintext=self.args.accept_plaintext_secrets)

    async def _patiently(self, step: str, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, retried with backoff while etcd is unreachable, for STARTUP_PATIENCE at most."""
        give_up = self.clock.monotonic() + STARTUP_PATIENCE
        delay = _STARTUP_BACKOFF[0]
        while True:
            try:
                return await call()
            except Unavailable as e:
                if self.clock.monotonic() + delay >= give_up:
                    raise
                log.warning("event=etcd-unreachable-at-start step=%s retry_in=%gs error=%s", step, delay, e)
                await self.clock.sleep(delay)
                delay = min(delay * 2, _STARTUP_BACKOFF[1])

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        trace_file = self.args.trace_file or (
            os.path.join(self.args.data_dir, "traces.jsonl") if self.args.data_dir else None
        )
        provider = setup_tracing(self.spec.name, trace_file)
        store = await self._patiently("connect", self._store)
        ctx = ServiceContext(
            name=self.spec.name,
            args=self.args,
            store=store,
            clock=self.clock,
            identity=self.identity,
            events=EventQueue(store, self.spec.name, host=socket.gethostname(), qps=self.args.event_qps),
            tracer=trace.get_tracer(f"flotilla.{self.spec.name}"),
            on_unhealthy=self._task_down,
            on_healthy=self._tasks_up,
            on_shards=functools.partial(self.health.set_reason, "shards"),
        )
        server = grpc.aio.server(interceptors=self._interceptors(store), options=server_options(self.args),
                                 maximum_concurrent_rpcs=self.args.max_concurrent_rpcs)
        ctx.server = server
        names = [health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME]
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        if self.spec.add_servicers:
            names.extend(self.spec.add_servicers(server, ctx))
        reflection.enable_server_reflection(names, server)
        if self.grpc_tls is None:
            log.warning("event=serving-without-tls address=%s", self.args.listen_address)
            port = server.add_insecure_port(self.args.listen_address)
        else:
            port = server.add_secure_port(self.args.listen_address, self.grpc_tls.server_credentials())
        host = self.args.listen_address.rsplit(":", 1)[0]
        self.address = self.args.advertise_address or f"{_reachable(host)}:{port}"
        await server.start()
        health_server = await self._start_health_server(host)
        self.metrics_port = _start_metrics(self.args.metrics_port, self.args.metrics_bind_address)
        registration = Registration(
            store,
            Endpoint(
                service=self.spec.name,
                id=self.identity,
                address=self.address,
                metrics_port=self.metrics_port,
                pid=os.getpid(),
                started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                # Only where it is: how to call it (TLS, the name its certificate must carry) is
                # the caller's configuration (flotilla.security.tls.service_server_name), never this record's.
            ),
            ttl=max(int(self.args.endpoint_ttl), 1),
        )
        await self._patiently("register", registration.start)
        await self.health.publish()
        log.info("event=serving address=%s metrics_port=%s identity=%s", self.address, self.metrics_port, self.identity)
        events = asyncio.create_task(ctx.events.run(), name="events")
        leading = asyncio.create_task(self._lead_forever(ctx), name="lead-forever")
        leading.add_done_callback(self._leading_ended)
        sharing = asyncio.create_task(self._share_forever(ctx), name="share-forever")
        try:
            await self.stopping.wait()
        finally:
            log.info("event=shutdown identity=%s", self.identity)
            await self.health.enter_graceful_shutdown()
            await cancel_and_wait(leading, sharing, events)
            if ctx.elector is not None:
                await ctx.elector.resign()
            await registration.close()
            await server.stop(self.args.shutdown_grace)
            if health_server is not None:
                await health_server.stop(None)
            await store.close()
            provider.shutdown()

    def _interceptors(self, store: StoreBase) -> list[grpc.aio.ServerInterceptor]:
        """Callers of the service's own API authorized by the webhook; without TLS no caller has an
        identity to authorize (a plane on loopback, as the webhook's AlwaysAllow)."""
        if self.grpc_tls is None or not self.spec.access:
            return []

        async def webhooks() -> list[str]:
            return self.api or [e.address for e in await list_endpoints(store, "webhook")]

        return [Authorizing(AccessReviewer(webhooks, self.api_tls or self.etcd_tls, self.clock), self.spec.access)]

    @property
    def elects(self) -> bool:
        """Whether this instance campaigns before it runs `lead`. A service whose every replica does
        the same work (the webhook: `leader_elect=False`) never does, whatever --leader-elect or
        FLOTILLA_LEADER_ELECT (set for every service in deploy/k8s) says: a standby would never
        start its informers, and answer nothing."""
        return self.spec.leader_elect and bool(self.args.leader_elect)

    async def _start_health_server(self, host: str) -> grpc.aio.Server | None:
        if self.args.health_port < 0:
            return None
        server = grpc.aio.server(options=server_options(self.args), maximum_concurrent_rpcs=16)
        health_pb2_grpc.add_HealthServicer_to_server(WithoutReasons(self.health), server)
        self.health_port = server.add_insecure_port(f"{host or '0.0.0.0'}:{self.args.health_port}")
        await server.start()
        return server

    async def _task_down(self, name: str, error: BaseException) -> None:
        log.warning("event=not-serving task=%s error=%s: %s", name, type(error).__name__, error)
        await self.health.set_reason(f"task/{name}", f"task {name} failed ({type(error).__name__}: {error}); "
                                                       "restarting with backoff")

    async def _tasks_up(self) -> None:
        log.info("event=serving-again")
        await self.health.clear("task/")

    async def _election(self, reason: str | None) -> None:
        await self.health.set_reason("election", reason)

    def _leading_ended(self, task: asyncio.Task[None]) -> None:
        # _lead_forever only ends by cancellation; anything else is a bug that must not
        # leave the service SERVING and idle.
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        log.error("event=leader-loop-died error=%s: %s", type(error).__name__, error)
        self._background.add(asyncio.get_running_loop().create_task(self.health.set_reason(
            "leader-loop", f"leader election loop died ({type(error).__name__}: {error})")))

    async def _lead(self, ctx: ServiceContext) -> None:
        assert self.spec.lead is not None
        try:
            await self.spec.lead(ctx)
        finally:
            # A task that was down when leadership ended is no reason for a standby to look
            # broken; after graceful shutdown began, the servicer ignores this.
            await self.health.clear("task/")

    async def _share_forever(self, ctx: ServiceContext) -> None:
        if self.spec.share is None:
            return
        while True:
            try:
                await self.spec.share(ctx)
                return
            except Exception as e:  # a bug in the shared work must not end it for good
                log.exception("event=share-failed error=%s: %s", type(e).__name__, e)
                await self.health.set_reason("share", f"shared work failed ({type(e).__name__}: {e}); restarting")
                await asyncio.sleep(1.0)
                await self.health.clear("share")

    async def _lead_forever(self, ctx: ServiceContext) -> None:
        if self.spec.lead is None:
            return
        if not self.elects:
            await self._lead(ctx)
            return
        ttl = max(int(self.args.leader_elect_lease_duration), 1)
        pause = 0.0
        while True:
            if pause:
                await asyncio.sleep(pause)
            try:
                pause = await self._one_term(ctx, ttl)
            except Exception as e:  # a bug in one term must not end the campaigning
                log.exception("event=leader-term-failed error=%s: %s", type(e).__name__, e)
                await self._election(f"leadership term failed ({type(e).__name__}: {e}); campaigning again")
                pause = 1.0

    async def _one_term(self, ctx: ServiceContext, ttl: int) -> float:
        """Campaign, lead until leadership is lost or the work ends; the pause before the next
        campaign."""
        async def failing(error: BaseException) -> None:
            await self._election(f"cannot campaign for leadership: etcd unreachable ({type(error).__name__}: {error})")

        async def standby(_leader: str) -> None:
            await self._election(None)

        elector = LeaderElector(ctx.store, self.spec.name, self.identity, ttl,
                                on_retry=failing, on_standby=standby, clock=ctx.clock)
        ctx.elector = elector
        await elector.campaign()
        await self._election(None)
        work = asyncio.create_task(self._lead(ctx))
        lost = asyncio.create_task(elector.lost.wait())
        try:
            await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(work, lost)
        failed = work.done() and not work.cancelled() and work.exception() is not None
        if failed:
            log.error("event=leader-work-failed error=%s", work.exception())
        elif elector.lost.is_set():
            await self._election(f"lost leadership (lease not refreshed within {ttl}s); campaigning again")
        await elector.resign()
        # After a failure let a standby lead, and do not spin if the failure repeats at once.
        return 1.0 if failed else 0.0


# A client that pings more often than this without calls gets GOAWAY after two strikes, as gRPC
# servers enforce keepalive; the server pings an idle connection to find dead peers.
_MIN_CLIENT_PING_MS = 30_000
_KEEPALIVE_MS, _KEEPALIVE_TIMEOUT_MS = 60_000, 20_000
_MAX_STREAMS_PER_CONNECTION = 256


def server_options(args: argparse.Namespace) -> list[tuple[str, int]]:
    """What bounds one caller's share of a service's gRPC server: streams per connection, message
    sizes, keepalive enforcement. (Calls in all: `maximum_concurrent_rpcs`.)"""
    return [
        ("grpc.max_concurrent_streams", _MAX_STREAMS_PER_CONNECTION),
        ("grpc.max_receive_message_length", args.max_message_bytes),
        ("grpc.max_send_message_length", 4 * args.max_message_bytes),
        ("grpc.keepalive_time_ms", _KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", _KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 0),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", _MIN_CLIENT_PING_MS),
        ("grpc.http2.max_ping_strikes", 2),
    ]


def _reachable(host: str) -> str:
    if host in ("", "0.0.0.0", "[::]", "::"):
        return socket.gethostbyname(socket.gethostname())
    return host


def _start_metrics(port: int, host: str) -> int:
    if port < 0:
        return 0
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host)
    return server.server_port
