"""What Flotilla needs to reach a member cluster, and reading it from a kubeconfig."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = ["Credentials", "load_kubeconfig"]


@dataclass(frozen=True)
class Credentials:
    """A joined cluster's API server and bearer token. `ca_data` is base64 PEM, as in a
    kubeconfig's certificate-authority-data. `proxy_url` (a Cluster's spec.proxyURL, http:// or
    https://) is the proxy every request to the member goes through, and `proxy_header` (its
    spec.proxyHeader, as (name, value) pairs) the headers sent to that proxy, Proxy-Authorization
    for one; a value holding several, comma-separated, is sent as that many headers, as Karmada's
    client sends them."""

    server: str
    token: str = ""
    ca_data: str = ""
    insecure_skip_tls_verify: bool = False
    proxy_url: str = ""
    proxy_header: tuple[tuple[str, str], ...] = ()

    def proxy_headers(self) -> list[tuple[str, str]]:
        """The headers for the proxy, one per value (`k: "v1,v2"` is two `k` headers)."""
        return [(name, value.strip()) for name, values in self.proxy_header for value in values.split(",")]

    def __repr__(self) -> str:
        # Credentials end up in logs and exception messages; the token must not, nor what
        # authenticates to the proxy (its header values, a password in its URL).
        token = "***" if self.token else ""
        proxy = ""
        if self.proxy_url:
            try:
                url = urlsplit(self.proxy_url)
                where = f"{url.scheme}://{url.netloc.rpartition('@')[2]}"
            except ValueError:  # an IPv6 bracket never closed: nothing of it shown, a password least
                where = "(not a URL)"
            proxy = f", proxy_url={where!r}, proxy_header={[name for name, _ in self.proxy_header]!r}"
        return (f"Credentials(server={self.server!r}, token={token!r}, ca_data={'...' if self.ca_data else ''!r}, "
                f"insecure_skip_tls_verify={self.insecure_skip_tls_verify}{proxy})")


def load_kubeconfig(path: str | Path, context: str | None = None) -> Credentials:
    """Credentials of `context` (default: current-context) in the kubeconfig at `path`.

    A cluster's `proxy-url` (as kubectl reads it) is the proxy to reach it through.
    Token authentication only (inline `token` or `tokenFile`): client certificates, exec
    plugins and auth providers are reported as "no token". Raises ValueError naming the file
    and what is missing.
    """
    path = Path(path)
    config = _read(path)
    name = context or config.get("current-context")
    if not name:
        raise ValueError(f"{path}: no context given and no current-context set "
                         f"(contexts: {_names(config, 'contexts')})")
    ctx = _entry(config, "contexts", "context", name, path)
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    if not cluster_name:
        raise ValueError(f"{path}: context {name!r} names no cluster")
    cluster = _entry(config, "clusters", "cluster", cluster_name, path)
    server = cluster.get("server")
    if not server:
        raise ValueError(f"{path}: cluster {cluster_name!r} has no server")
    if not user_name:
        raise ValueError(f"{path}: context {name!r} names no user, so there is no token")
    user = _entry(config, "users", "user", user_name, path)
    return Credentials(
        server=str(server).rstrip("/"),
        token=_token(user, user_name, path),
        ca_data=_ca_data(cluster, cluster_name, path),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        proxy_url=str(cluster.get("proxy-url") or ""),
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ValueError(f"{path}: cannot read kubeconfig: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(config, dict):
        raise ValueError(f"{path}: not a kubeconfig (expected a mapping at the top level)")
    return config


def _names(config: dict[str, Any], section: str) -> str:
    names = [str(item.get("name")) for item in config.get(section) or [] if isinstance(item, dict)]
    return ", ".join(names) or "none"


def _entry(config: dict[str, Any], section: str, field: str, name: str, path: Path) -> dict[str, Any]:
    for item in config.get(section) or []:
        if isinstance(item, dict) and item.get("name") == name:
            value = item.get(field)
            if not isinstance(value, dict):
                raise ValueError(f"{path}: {section[:-1]} {name!r} has no {field} section")
            return value
    raise ValueError(f"{path}: {section[:-1]} {name!r} not found ({section}: {_names(config, section)})")


def _token(user: dict[str, Any], name: str, path: Path) -> str:
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        token_path = _relative(path, user["tokenFile"])
        try:
            token = token_path.read_text().strip()
        except OSError as e:
            raise ValueError(f"{path}: user {name!r}: cannot read tokenFile {token_path}: {e.strerror or e}") from e
        if token:
            return token
        raise ValueError(f"{path}: user {name!r}: tokenFile {token_path} is empty")
    other = [key for key in ("client-certificate", "client-certificate-data", "exec", "auth-provider") if key in user]
    hint = f" (it uses {', '.join(other)}, which Flotilla does not support)" if other else ""
    raise ValueError(f"{path}: user {name!r} has no token{hint}")


def _ca_data(cluster: dict[str, Any], name: str, path: Path) -> str:
    if cluster.get("certificate-authority-data"):
        return str(cluster["certificate-authority-data"])
    if cluster.get("certificate-authority"):
        ca_path = _relative(path, cluster["certificate-authority"])
        try:
            return base64.b64encode(ca_path.read_bytes()).decode()
        except OSError as e:
            raise ValueError(f"{path}: cluster {name!r}: cannot read certificate-authority {ca_path}: "
                             f"{e.strerror or e}") from e
    return ""


def _relative(kubeconfig: Path, target: str) -> Path:
    # kubectl resolves relative file references against the kubeconfig's directory.
    candidate = Path(str(target)).expanduser()
    return candidate if candidate.is_absolute() else kubeconfig.parent / candidate
