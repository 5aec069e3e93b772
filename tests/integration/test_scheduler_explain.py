"""`flotillactl explain` needs a scheduler registered in etcd. (The scheduling loop itself is
tested on a MemoryStore in tests/unit/test_scheduler_loop_memory.py; the scheduler service on a
real etcd in test_scheduler_service.py.)"""

from __future__ import annotations

import pytest

from flotilla.store.embedded import EmbeddedEtcd
from tests.scheduler_support import flotillactl

pytestmark = pytest.mark.integration


async def test_explain_needs_a_running_scheduler(clean_etcd: EmbeddedEtcd) -> None:
    code, _, err = await flotillactl(clean_etcd.endpoint, "explain", "rb", "web-deployment")
    assert code == 1
    assert err.startswith("error: no scheduler service is registered in etcd")
