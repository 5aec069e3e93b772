"""How commands reach etcd and services: one place that turns "not there" into a one-line error
naming the address, and that picks the client certificate (flotilla.security.tls: FLOTILLA_TLS_* or
FLOTILLA_ETCD_*, else the current context's) for a plane that speaks TLS."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

import grpc

from flotilla.api.errors import UserError, short
from flotilla.security.context import client_tls, resolve_endpoints
from flotilla.security.crypto import configured_keys
from flotilla.security.tls import ENV_CA, ENV_CERT, ENV_KEY, grpc_channel
from flotilla.store import Store, StoreError
from flotilla.store.connect import make_client
from flotilla.store.endpoints import Endpoint


@contextlib.asynccontextmanager
async def open_store(args: argparse.Namespace) -> AsyncIterator[Store]:
    endpoints = resolve_endpoints(args.etcd_endpoints)
    store = Store(make_client(endpoints, timeout=5), endpoints=endpoints, keys=configured_keys())
    try:
        await store.client.connect()
        # The channel connects lazily: one cheap read proves etcd is there.
        await store.client.get(b"/flotilla/")
    except Exception as e:  # aetcd raises several unrelated types for "not there"
        await store.client.close()
        raise UserError(f"cannot reach etcd at {endpoints}: {short(e)}") from e
    try:
        yield store
    except StoreError:
        raise
    finally:
        await store.client.close()


def service_channel(endpoint: Endpoint | str) -> grpc.aio.Channel:
    """A channel to a registered service instance (mutual TLS when it registered so), or to an
    address given by hand (TLS whenever a client certificate is configured)."""
    if isinstance(endpoint, str):
        return grpc_channel(endpoint, client_tls())
    if endpoint.extra.get("tls") != "mutual":
        return grpc_channel(endpoint.address, None)
    tls = client_tls()
    if tls is None:
        raise UserError(f"{endpoint.service} at {endpoint.address} requires a client certificate: use the context "
                       f"`flotilla up` records, or set {ENV_CA}, {ENV_CERT} and {ENV_KEY}")
    return grpc_channel(endpoint.address, tls, endpoint.extra.get("tls_server_name", ""))
