"""FLOTILLA_WEBHOOK_ADDRESS overrides the endpoint registry (a plane in a cluster, reached
through `kubectl port-forward`; docs/deploy.md)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from flotilla.cli.webhook_client import ADDRESS_ENV, WebhookClient
from flotilla.store import Store


async def test_environment_names_the_webhook_without_asking_etcd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADDRESS_ENV, "127.0.0.1:8443, 127.0.0.1:8444")
    # A store that fails on any use: the registry must not be read.
    client = WebhookClient(cast(Store, cast(Any, object())))
    assert await client.addresses() == ["127.0.0.1:8443", "127.0.0.1:8444"]
