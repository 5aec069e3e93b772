"""The simulator's own certificate authority and the serving certificate it signs.

The CA is made once and kept in `<data-dir>/pki/`, so kubeconfigs written by an earlier run (and
stored by Flotilla at join time) keep verifying after a restart. The serving certificate is made
at every start, for 127.0.0.1, localhost and the address the server binds. The certificate code
is Flotilla's own (flotilla.security.tls); only the names are the simulator's.
"""

from __future__ import annotations

import base64
import socket
import ssl
from pathlib import Path

from flotilla.security import tls


class Authority:
    """The CA (loaded from or written to `directory`) and a serving certificate for `hosts`,
    written as `<serving>.crt`/`.key` (each process of a sharded simulator has its own)."""

    def __init__(self, directory: Path, hosts: list[str], serving: str = "serving") -> None:
        self.directory = directory
        authority = ensure_ca(directory)
        self.ca_pem = authority.ca_pem
        files = authority.issue(serving, "kube-apiserver", hosts, server=True, client=False)
        self.cert_path, self.key_path = Path(files.cert), Path(files.key)

    @property
    def ca_data(self) -> str:
        """The CA as a kubeconfig's certificate-authority-data (base64 of the PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def ensure_ca(directory: Path) -> tls.Authority:
    """The CA kept in `directory`, made there first if missing. A sharded simulator's parent calls
    this before starting its processes, so they all load the one CA instead of racing to make it."""
    try:
        return tls.Authority(directory, "flotilla-sim-ca")
    except tls.TLSError as e:
        raise ValueError(f"the simulator's CA: {e} (was pki/ca.key replaced?)") from e


def serving_hosts(bind_host: str) -> list[str]:
    """Names the serving certificate covers: loopback, and the bound address (the machine's name
    too when it binds every interface)."""
    hosts = ["127.0.0.1", "localhost"]
    if bind_host in ("0.0.0.0", "::", ""):
        hosts.append(socket.gethostname())
    elif bind_host not in hosts:
        hosts.append(bind_host)
    return hosts
