"""The endpoint registry: how tools find services through etcd alone.

Each service instance writes `/flotilla/endpoints/<service>/<id>` on a lease it
keeps alive, so a dead instance disappears by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import asdict, dataclass, field

import aetcd
import aetcd.exceptions

from flotilla.aio.tasks import cancel_and_wait

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


async def list_endpoints(client: aetcd.Client, service: str | None = None) -> list[Endpoint]:
    prefix = ENDPOINTS_PREFIX + (f"{service}/" if service else "")
    result = await client.get_prefix(prefix.encode())
    found = []
    for kv in result:
        try:
            endpoint = Endpoint(**json.loads(kv.value))
            # Which service it is, is where it is registered, not what it says.
            endpoint.service = kv.key.decode()[len(ENDPOINTS_PREFIX):].split("/", 1)[0]
            found.append(endpoint)
        except (ValueError, TypeError):
            log.warning("event=bad-endpoint key=%s", kv.key.decode())
    return sorted(found, key=lambda e: (e.service, e.id))


class Registration:
    """Keeps one endpoint registered until `close()`; re-registers after lease loss."""

    def __init__(self, client: aetcd.Client, endpoint: Endpoint, ttl: int = 10) -> None:
        self.client = client
        self.endpoint = endpoint
        self.ttl = ttl
        self._lease_id: int | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._register()
        self._task = asyncio.create_task(self._keep_alive())

    async def _register(self) -> None:
        lease = await self.client.lease(self.ttl)
        self._lease_id = lease.id
        value = json.dumps(asdict(self.endpoint)).encode()
        await self.client.put(self.endpoint.key.encode(), value, lease=lease.id)

    async def _keep_alive(self) -> None:
        while True:
            await asyncio.sleep(max(self.ttl / 3, 0.2))
            try:
                reply = await self.client.refresh_lease(self._lease_id)
                if reply is None or reply.TTL <= 0:
                    await self._register()
            except aetcd.exceptions.ClientError as e:
                log.warning("event=endpoint-refresh-failed key=%s error=%s", self.endpoint.key, e)

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if self._lease_id is not None:
            with contextlib.suppress(aetcd.exceptions.ClientError):
                await self.client.revoke_lease(self._lease_id)
            self._lease_id = None
