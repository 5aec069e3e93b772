"""How commands reach etcd: one place that turns "not there" into a one-line error naming the address."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

from flotilla.cli.context import resolve_endpoints
from flotilla.cli.errors import CLIError, short
from flotilla.store import Store, StoreError
from flotilla.store.connect import make_client


@contextlib.asynccontextmanager
async def open_store(args: argparse.Namespace) -> AsyncIterator[Store]:
    endpoints = resolve_endpoints(args.etcd_endpoints)
    store = Store(make_client(endpoints, timeout=5), endpoints=endpoints)
    try:
        await store.client.connect()
        # The channel connects lazily: one cheap read proves etcd is there.
        await store.client.get(b"/flotilla/")
    except Exception as e:  # aetcd raises several unrelated types for "not there"
        await store.client.close()
        raise CLIError(f"cannot reach etcd at {endpoints}: {short(e)}") from e
    try:
        yield store
    except StoreError:
        raise
    finally:
        await store.client.close()
