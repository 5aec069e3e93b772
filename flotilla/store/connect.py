"""Connecting to etcd from a `--etcd-endpoints` style URL list.

Which etcd to use is decided above the store (flotilla.context: flag, environment, current
context); there is no default address here, so nothing silently reaches a plane on port 2379.
"""

from __future__ import annotations

from urllib.parse import urlparse

import aetcd


def parse_endpoint(endpoints: str) -> tuple[str, int]:
    """The first endpoint of a comma-separated list as (host, port).

    aetcd speaks to one member; the first endpoint is the one we use.
    """
    first = endpoints.split(",")[0].strip()
    if "://" not in first:
        first = "http://" + first
    url = urlparse(first)
    if not url.hostname:
        raise ValueError(f"etcd endpoint {first!r}: no host")
    return url.hostname, url.port or 2379


def make_client(endpoints: str, timeout: float | None = 10.0) -> aetcd.Client:
    host, port = parse_endpoint(endpoints)
    return aetcd.Client(
        host=host,
        port=port,
        timeout=timeout,
        options={
            # Reconnect promptly after an etcd restart instead of backing off for a minute.
            "grpc.initial_reconnect_backoff_ms": 100,
            "grpc.max_reconnect_backoff_ms": 1000,
            "grpc.max_receive_message_length": 64 * 1024 * 1024,
        },
    )
