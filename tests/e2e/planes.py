"""One way to start and stop a control plane for an e2e module: `flotilla up` with simulated
members and the demo profile, on a free port and in its own directory, always taken down.
Its certificates are signed by the session's CA and its Secrets encrypted with the session's
keys (tests/conftest.py `security`), so the tests' key file is good for every plane; while a plane
runs, the tests call as its `admin`."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from flotilla.security import tls
from flotilla.security.crypto import ENV_KEY_FILE
from flotilla.security.tls import ENV_CA
from flotilla.store.embedded import free_port
from tests.conftest import ROOT

BIN = Path(sys.executable).parent


@contextlib.contextmanager
def flotilla_up(tmp_path_factory: pytest.TempPathFactory, clusters: int, *extra: str,
                env: Mapping[str, str] | None = None) -> Iterator[tuple[Path, str]]:
    """The plane's data dir and etcd endpoint, while it runs. `env` is added to the environment
    `flotilla up` gives every service."""
    data_dir = tmp_path_factory.mktemp("plane")
    port = free_port()
    pki = Path(os.environ[ENV_CA]).parent
    up = subprocess.run([str(BIN / "flotilla"), "up", "--detach", "--data-dir", str(data_dir), "--etcd-port",
                         str(port), "--sim-clusters", str(clusters), "--profile", "demo", "--ca-cert",
                         str(pki / "ca.crt"), "--ca-key", str(pki / "ca.key"),
                         "--encryption-key-file", os.environ[ENV_KEY_FILE], *extra],
                        cwd=ROOT, capture_output=True, text=True, timeout=180,
                        env={**os.environ, **env} if env else None)
    try:
        assert up.returncode == 0, up.stderr
        # The tests act as the plane's administrator, whose certificate etcd (auth on, each
        # identity its own user) knows: `admin` is root in every plane of the session's CA.
        admin = tls.TLSFiles(str(pki / "ca.crt"), str(data_dir / "pki" / "admin.crt"),
                             str(data_dir / "pki" / "admin.key"))
        with pytest.MonkeyPatch.context() as patch:
            for name, value in tls.process_env(admin).items():
                patch.setenv(name, value)
            yield data_dir, f"https://127.0.0.1:{port}"
    finally:
        subprocess.run([str(BIN / "flotilla"), "down", "--data-dir", str(data_dir)], capture_output=True,
                       timeout=60)
