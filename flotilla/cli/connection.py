"""How commands reach the plane and its services: one place that turns "not there" into a one-line
error naming the address, and that picks the client certificate (flotilla.security.tls:
FLOTILLA_TLS_* or FLOTILLA_ETCD_*, else the current context's) for a plane that speaks TLS.

Commands read and write through the plane's API (the webhook's storage API), authorized by RBAC
like any caller, so a person needs a certificate and no etcd credential. Where the API is, in
order: FLOTILLA_WEBHOOK_ADDRESS, else the current context's `api_address` (`flotilla up` records
it). An administrator may go to etcd instead by naming it (`--etcd-endpoints`, or
FLOTILLA_ETCD_ENDPOINTS with no API address given); etcd then authorizes with its own roles."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncIterator

import grpc

from flotilla.api.errors import UserError, short
from flotilla.security.context import ENV_ENDPOINTS, client_tls, current_context, resolve_endpoints
from flotilla.security.crypto import configured_keys
from flotilla.security.tls import grpc_channel, service_server_name
from flotilla.store import Store, StoreError
from flotilla.store.base import StoreBase
from flotilla.store.connect import make_client
from flotilla.store.endpoints import Endpoint
from flotilla.store.remote import RemoteStore

API_ADDRESS_ENV = "FLOTILLA_WEBHOOK_ADDRESS"


def api_addresses(args: argparse.Namespace) -> list[str]:
    """The plane's API to use, or [] for etcd (see the module's docstring)."""
    if args.etcd_endpoints:
        return []
    given = os.environ.get(API_ADDRESS_ENV, "")
    if not given and not os.environ.get(ENV_ENDPOINTS):
        context = current_context()
        given = context.api_address if context is not None else ""
    return [a.strip() for a in given.split(",") if a.strip()]


@contextlib.asynccontextmanager
async def open_store(args: argparse.Namespace) -> AsyncIterator[StoreBase]:
    """The plane's objects: through its API when one is known, else in etcd."""
    addresses = api_addresses(args)
    if not addresses:
        async with open_etcd(args) as store:
            yield store
        return
    remote = RemoteStore(addresses, client_tls(), timeout=10)
    try:
        yield remote
    finally:
        await remote.close()


@contextlib.asynccontextmanager
async def open_etcd(args: argparse.Namespace) -> AsyncIterator[Store]:
    """etcd itself, for what only an administrator does there (re-encrypting Secrets)."""
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


def service_channel(endpoint: Endpoint | str, service: str = "") -> grpc.aio.Channel:
    """A channel to an instance of `service` (a registered endpoint's own service by default), or
    to an address given by hand. With a client certificate configured the call is mutual TLS, and
    the service's certificate must carry the service's server name (service_server_name): what an
    endpoint record says gives only the address, so a record written by anyone else can neither
    get a plaintext call nor one verified against a name of its choosing."""
    address = endpoint if isinstance(endpoint, str) else endpoint.address
    service = service or ("" if isinstance(endpoint, str) else endpoint.service)
    tls = client_tls()
    if tls is None:
        return grpc_channel(address, None)
    if not service:
        raise UserError(f"which service is at {address} is not known, so its certificate cannot be verified")
    return grpc_channel(address, tls, service_server_name(service))
