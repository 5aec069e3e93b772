"""The endpoint registry: how tools find services through the store alone.

Each service instance writes `/flotilla/endpoints/<service>/<id>` on a lease it
keeps alive, so a dead instance disappears by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import asdict, dataclass, field

from flotilla.aio.tasks import cancel_and_wait
from flotilla.store.base import StoreBase
from flotilla.store.errors import StoreError

log = logging.getLogger(__name__)

ENDPOINTS_PREFIX = "/flotilla/endpoints/"


@dataclass
class Endpoint:
    service: str
    id: str
    address: str
    metrics_port: int = 0
    pid: int = 0
    started: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{ENDPOINTS_PREFIX}{self.service}/{self.id}"

    @property
    def metrics_address(self) -> str:
        """host:port of its Prometheus endpoint (the gRPC address's host), or "" when it has none."""
        if self.metrics_port <= 0:
            return ""
        return f"{self.address.rsplit(':', 1)[0]}:{self.metrics_port}"


async def list_endpoints(store: StoreBase, service: str | None = None) -> list[Endpoint]:
    prefix = ENDPOINTS_PREFIX + (f"{service}/" if service else "")
    found = []
    for kv in (await store.kv_range(prefix))[0]:
        try:
            endpoint = Endpoint(**json.loads(kv.value))
            # Which service it is, is where it is registered, not what it says.
            endpoint.service = kv.key[len(ENDPOINTS_PREFIX):].split("/", 1)[0]
            found.append(endpoint)
        except (ValueError, TypeError):
            log.warning("event=bad-endpoint key=%s", kv.key)
    return sorted(found, key=lambda e: (e.service, e.id))


class Registration:
    """Keeps one endpoint registered until `close()`; re-registers after lease loss."""

    def __init__(self, store: StoreBase, endpoint: Endpoint, ttl: int = 10) -> None:
        self.store = store
        self.endpoint = endpoint
        self.ttl = ttl
        self._lease_id: int | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._register()
        self._task = asyncio.create_task(self._keep_alive())

    async def _register(self) -> None:
        self._lease_id = lease = await self.store.grant_lease(self.ttl)
        value = json.dumps(asdict(self.endpoint)).encode()
        key = self.endpoint.key
        # Put whatever an earlier registration of this instance left (the key is this
        # instance's own): create, else replace at the revision found.
        for _ in range(5):
            found = await self.store.kv_create(key, value, lease)
            if isinstance(found, int):
                return
            current = found or await self.store.kv_get(key)
            if current is not None and await self.store.kv_put_if(key, value, current.mod_revision, lease):
                return
        raise StoreError(f"{key}: could not register (it kept changing)")

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(max(self.ttl / 3, 0.2))
            try:
                assert self._lease_id is not None
                if await self.store.refresh_lease(self._lease_id) <= 0:
                    await self._register()
            except StoreError as e:
                log.warning("event=endpoint-refresh-failed key=%s error=%s", self.endpoint.key, e)

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if self._lease_id is not None:
            with contextlib.suppress(StoreError):
                await self.store.revoke_lease(self._lease_id)
            self._lease_id = None
