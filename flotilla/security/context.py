"""Finding the control plane the way kubectl finds a cluster.

`flotilla up` records the plane it started in `<data-dir>/context.json` and
points the user-level file `current` at that data dir:

    $FLOTILLA_CONFIG                      (when set: the pointer file itself)
    $XDG_CONFIG_HOME/flotilla/current     (else; XDG_CONFIG_HOME defaults to ~/.config)

The pointer holds one line, the data dir's absolute path. `flotillactl`,
`flotilla sim` and every service (`python -m services.<name>`) take etcd from
`--etcd-endpoints`, else `FLOTILLA_ETCD_ENDPOINTS`, else the current context
(`flotilla sim fault --data-dir DIR` reads DIR's context before the environment);
with none of them they stop with one line saying what to do. The context also names the
plane's client certificate (gRPC and etcd, see flotilla.security.tls) and its encryption key file
(flotilla.security.crypto), which tools use when no flag or variable names others. Nothing falls back
to a guessed address such as http://127.0.0.1:2379: whatever plane happened to
listen there would be used silently.

This module lives below the store because services and the store use it as well as the CLI.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from flotilla.api.errors import UserError
from flotilla.security.tls import (
    ENV_CA,
    ENV_CERT,
    ENV_ETCD_CA,
    ENV_ETCD_CERT,
    ENV_ETCD_KEY,
    ENV_KEY,
    TLSError,
    TLSFiles,
    from_env,
    is_tls_endpoint,
    write_file,
)

CONTEXT_FILE = "context.json"
ENV_ENDPOINTS = "FLOTILLA_ETCD_ENDPOINTS"
ENV_CONFIG = "FLOTILLA_CONFIG"

__all__ = [
    "CONTEXT_FILE", "ENV_CONFIG", "ENV_ENDPOINTS", "NO_PLANE", "Context", "ContextError", "clear_current_if",
    "current_context", "current_data_dir", "pointer_path", "resolve_endpoints", "set_current",
]

NO_PLANE = ("no control plane to talk to: run `flotilla up`, or pass --etcd-endpoints "
            f"(or set {ENV_ENDPOINTS})")


class ContextError(UserError):
    """No plane to talk to, or its context cannot be read; the message is one line saying what to do."""


@dataclass
class Context:
    """One running plane: where its etcd is and where its files are."""

    etcd_endpoints: str
    data_dir: str
    sim_address: str = ""
    # The plane's client certificate (empty with `flotilla up --insecure`).
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    encryption_key_file: str = ""
    # The plane's API (the webhook's replicas, host:port, comma-separated): how `flotillactl`
    # reads and writes without an etcd credential.
    api_address: str = ""

    def tls(self) -> TLSFiles | None:
        if not (self.tls_ca and self.tls_cert and self.tls_key):
            return None
        return TLSFiles(self.tls_ca, self.tls_cert, self.tls_key)

    @staticmethod
    def path(data_dir: Path | str) -> Path:
        return Path(data_dir) / CONTEXT_FILE

    def save(self) -> Path:
        """Written as key files are (flotilla.security.tls.write_file): it names the certificate, key
        and encryption key file that tools use, so no file left or linked in its place is written
        through, and a reader sees the old context or the new one."""
        path = self.path(self.data_dir)
        write_file(path, (json.dumps(asdict(self), indent=2) + "\n").encode())
        return path

    @classmethod
    def load(cls, data_dir: Path | str) -> Context | None:
        """The context recorded in a data dir; None when there is none (the plane is down)."""
        path = cls.path(data_dir)
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise ContextError(f"{path} cannot be read: {e} (run `flotilla up` again to rewrite it)") from e
        if not isinstance(raw, dict) or not isinstance(raw.get("etcd_endpoints"), str) or not raw["etcd_endpoints"]:
            raise ContextError(f"{path} has no etcd_endpoints (run `flotilla up` again to rewrite it)")
        optional = {name: str(raw.get(name) or "")
                    for name in ("sim_address", "tls_ca", "tls_cert", "tls_key", "encryption_key_file",
                                 "api_address")}
        return cls(etcd_endpoints=raw["etcd_endpoints"], data_dir=str(raw.get("data_dir") or Path(data_dir)),
                   **optional)

    @classmethod
    def remove(cls, data_dir: Path | str) -> None:
        cls.path(data_dir).unlink(missing_ok=True)


def pointer_path() -> Path:
    """The user-level file naming the current plane's data dir."""
    explicit = os.environ.get(ENV_CONFIG)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flotilla" / "current"


def current_data_dir() -> Path | None:
    """The data dir the pointer names, or None when there is no pointer."""
    path = pointer_path()
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ContextError(f"{path} cannot be read: {e.strerror or e}") from e
    return Path(text) if text else None


def set_current(data_dir: Path) -> Path:
    """Point the user-level pointer at this data dir (absolute)."""
    path = pointer_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # It decides which plane (and so which credentials) every tool uses: written as a key file is.
    write_file(path, f"{data_dir.resolve()}\n".encode())
    return path


def clear_current_if(data_dir: Path) -> bool:
    """Remove the pointer when it names this data dir; a pointer to another plane stays."""
    try:
        current = current_data_dir()
    except ContextError:
        return False
    if current is None or current.resolve() != data_dir.resolve():
        return False
    pointer_path().unlink(missing_ok=True)
    return True


def current_context() -> Context | None:
    """The context of the plane the pointer names; an error when the pointer names a plane that is down."""
    data_dir = current_data_dir()
    if data_dir is None:
        return None
    context = Context.load(data_dir)
    if context is None:
        raise ContextError(f"the current context ({pointer_path()}) names {data_dir}, where no control plane is "
                       "running: run `flotilla up`, or pass --etcd-endpoints")
    return context


def resolve_endpoints(explicit: str | None, data_dir: str | Path | None = None) -> str:
    """`--etcd-endpoints` > `--data-dir`'s context (a flag too, where a command has it) >
    FLOTILLA_ETCD_ENDPOINTS > the current context."""
    if explicit:
        return explicit
    if data_dir is not None:
        context = Context.load(data_dir)
        if context is None:
            raise ContextError(f"no control plane is running from {data_dir} (no {Context.path(data_dir)}): "
                           "run `flotilla up`, or pass --etcd-endpoints")
        return context.etcd_endpoints
    env = os.environ.get(ENV_ENDPOINTS)
    if env:
        return env
    context = current_context()
    if context is None:
        raise ContextError(NO_PLANE)
    return context.etcd_endpoints


# -- what the current context says about TLS -------------------------------------------------


def etcd_client_tls(endpoints: str) -> TLSFiles | None:
    """What a process without `--etcd-*` flags uses for etcd: nothing for http://; for https://
    the FLOTILLA_ETCD_* variables, else the current context's client certificate when that
    context is this etcd's."""
    if not is_tls_endpoint(endpoints):
        return None
    found = from_env(ENV_ETCD_CA, ENV_ETCD_CERT, ENV_ETCD_KEY) or _context_tls(endpoints)
    if found is None:
        raise TLSError(f"etcd at {endpoints} speaks TLS: give its CA and a client certificate "
                       f"(--etcd-cacert/--etcd-cert/--etcd-key, or {ENV_ETCD_CA}/{ENV_ETCD_CERT}/{ENV_ETCD_KEY})")
    return found


def client_tls() -> TLSFiles | None:
    """A tool's gRPC client certificate: FLOTILLA_TLS_*, else the current context's."""
    return from_env(ENV_CA, ENV_CERT, ENV_KEY) or _context_tls(None)


def _context_tls(endpoints: str | None) -> TLSFiles | None:
    try:
        context = current_context()
    except ContextError:
        return None
    if context is None or (endpoints is not None and context.etcd_endpoints != endpoints):
        return None
    return context.tls()
