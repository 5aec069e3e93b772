"""The kubeconfig the simulator writes for each cluster (server URL, CA, bearer token)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import yaml

from flotilla.security.tls import write_file


def write_kubeconfig(path: Path, cluster: str, server: str, token: str, ca_data: str) -> None:
    user = f"{cluster}-admin"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # 0600 and never through what is on disk (write_file): it holds a credential.
    write_file(path, yaml.safe_dump(config, sort_keys=False).encode(), private=True)


def existing_token(path: Path) -> str | None:
    """The token of a kubeconfig written by an earlier run, so clients that stored it keep working
    across a simulator restart."""
    try:
        config = yaml.safe_load(path.read_text())
        return str(config["users"][0]["user"]["token"]) or None
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None


def existing_port(path: Path) -> int:
    """The port of the server URL an earlier run wrote (0 if none), so the cluster keeps its URL."""
    try:
        config = yaml.safe_load(path.read_text())
        url = urlsplit(str(config["clusters"][0]["cluster"]["server"]))
        return url.port or 0 if url.scheme == "https" else 0
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError):
        return 0
