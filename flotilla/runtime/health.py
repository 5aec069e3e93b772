"""A service's grpc.health.v1 answer, and why it is NOT_SERVING.

A service is NOT_SERVING while it has a reason not to serve: it cannot campaign for
leadership (etcd unreachable), it lost leadership and has not found out who leads now, or
one of its supervised tasks is down. Each reason is kept under its source, so one clearing
does not hide another. The reason travels with each Check answer as trailing metadata,
which plain health clients ignore and `flotillactl status` shows; the plain health port the
kubelet probes (`WithoutReasons`) does not send it.
"""

from __future__ import annotations

from typing import Any

from grpc_health.v1 import health, health_pb2
from prometheus_client import Gauge

REASON_METADATA = "flotilla-health-reason"
# Trailing metadata is a header line: ASCII, no newlines, and not unbounded.
_REASON_LIMIT = 400

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

# What the health service answers, for Prometheus: an instance at 0 is NOT_SERVING for one of the
# reasons above (the FlotillaServiceNotServing alert, docs/alerts.md).
SERVING_STATE = Gauge("flotilla_service_serving", "1 while the service answers SERVING on grpc.health.v1, "
                      "0 while NOT_SERVING", ["service"])


def header_safe(text: str) -> str:
    flat = " ".join(text.split()).encode("ascii", "replace").decode("ascii")
    return flat if len(flat) <= _REASON_LIMIT else flat[: _REASON_LIMIT - 3] + "..."


class ServiceHealth(health.aio.HealthServicer):  # type: ignore[misc]
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self._reasons: dict[str, str] = {}

    @property
    def reason(self) -> str:
        return "; ".join(self._reasons[k] for k in sorted(self._reasons))

    @property
    def serving(self) -> bool:
        return not self._reasons

    async def set_reason(self, source: str, reason: str | None) -> None:
        """Record (or, with None, clear) why `source` keeps the service from serving."""
        if reason is None:
            self._reasons.pop(source, None)
        else:
            self._reasons[source] = reason
        await self.publish()

    async def clear(self, prefix: str) -> None:
        """Clear every reason whose source starts with `prefix`."""
        for source in [s for s in self._reasons if s.startswith(prefix)]:
            del self._reasons[source]
        await self.publish()

    async def publish(self) -> None:
        status = SERVING if self.serving else NOT_SERVING
        SERVING_STATE.labels(self.service).set(1 if self.serving else 0)
        await self.set("", status)
        await self.set(self.service, status)

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        reply = await super().Check(request, context)
        if reply is not None and reply.status == NOT_SERVING:
            why = self.reason or "shutting down"
            context.set_trailing_metadata(((REASON_METADATA, header_safe(why)),))
        return reply


class WithoutReasons(health.aio.HealthServicer):  # type: ignore[misc]
    """The same answers without their reasons, for the plain (unauthenticated) health port the
    kubelet probes: why a service is not serving (etcd unreachable, a task's error) is for
    callers of the mutually authenticated port, `flotillactl status`."""

    def __init__(self, health: ServiceHealth) -> None:
        super().__init__()
        self.health = health

    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        return await health.aio.HealthServicer.Check(self.health, request, context)

    async def Watch(self, request: health_pb2.HealthCheckRequest, context: Any) -> Any:
        return await self.health.Watch(request, context)
