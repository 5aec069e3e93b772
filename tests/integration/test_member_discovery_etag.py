"""Aggregated discovery asked for with the ETags last seen, as the API server's handler allows: an
unchanged member answers 304 and the last result stands; a member whose APIs changed answers the
changed document in full."""

from __future__ import annotations

import pytest

from flotilla.aio.clock import RealClock
from flotilla.clusterstatus.member_http import Answer, MemberReader, MemberSession
from flotilla.member import Credentials, load_kubeconfig
from sim.catalog import ResourceType
from tests.sim_fixtures import StartSim

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


class Recording(MemberSession):
    """The status service's session, noting each discovery answer's status."""

    def __init__(self) -> None:
        super().__init__(timeout=5.0, keepalive=30.0)
        self.answers: list[tuple[str, int]] = []

    async def get(self, credentials: Credentials, path: str, operation: str, accept: str = "application/json",
                  etag: str = "", limit: int | None = None, limit_field: str = "object_bytes") -> Answer:
        answer = await super().get(credentials, path, operation, accept, etag, limit, limit_field)
        self.answers.append((path, answer.status))
        return answer


async def test_an_unchanged_member_answers_not_modified(start_sim: StartSim) -> None:
    server = await start_sim("member1", clock=RealClock())
    credentials = load_kubeconfig(server.kubeconfig_path("member1"))
    http, fresh = Recording(), MemberSession(timeout=5.0, keepalive=30.0)
    try:
        reader = MemberReader(http, credentials)
        first = await reader.api_enablements()
        assert http.answers == [("/api", 200), ("/apis", 200)]
        assert ("deployments", "Deployment") in dict(first)["apps/v1"]

        http.answers.clear()
        assert await reader.api_enablements() == first
        assert http.answers == [("/api", 304), ("/apis", 304)]

        # A new group: /apis changes and /api does not, whose content was not kept, so it is read again.
        server.cluster("member1").state.catalog.add(ResourceType("example.com", "v1", "Widget", "widgets", True))
        http.answers.clear()
        changed = await reader.api_enablements()
        assert http.answers == [("/api", 304), ("/apis", 200), ("/api", 200)]
        assert ("example.com/v1", [("widgets", "Widget")]) in changed
        assert changed == await MemberReader(fresh, credentials).api_enablements()
    finally:
        await http.close()
        await fresh.close()
