"""`flotillactl status` output: why an instance is not SERVING, as it says itself."""

from __future__ import annotations

import json

from flotilla.cli.status import InstanceStatus, render, render_json
from flotilla.runtime.health import header_safe
from flotilla.store.endpoints import Endpoint

STATUSES = [
    InstanceStatus(Endpoint("scheduler", "s-1", "10.0.0.7:50051"), "NOT_SERVING", False,
                   "cannot campaign for leadership: etcd unreachable (ConnectionFailedError: refused)"),
    InstanceStatus(Endpoint("status", "t-1", "10.0.0.8:50051"), "SERVING", True),
]


def test_the_table_lists_each_reason_under_it() -> None:
    lines = render(STATUSES).splitlines()
    assert lines[0].split()[:5] == ["SERVICE", "REPLICAS", "INSTANCE", "LEADER", "HEALTH"]
    assert lines[-1] == ("scheduler s-1: NOT_SERVING: cannot campaign for leadership: etcd unreachable "
                         "(ConnectionFailedError: refused)")
    assert "status t-1:" not in render(STATUSES)


def test_json_carries_the_reason() -> None:
    items = json.loads(render_json(STATUSES))["items"]
    assert [i["reason"] for i in items] == [STATUSES[0].reason, ""]


def test_a_reason_is_one_ascii_header_line_of_bounded_length() -> None:
    assert header_safe("lost\nleadership ✗") == "lost leadership ?"
    assert len(header_safe("x" * 5000)) == 400


def test_each_replica_shows_the_shards_it_holds() -> None:
    statuses = [InstanceStatus(Endpoint("executor", "e-1", "10.0.0.9:50051"), "SERVING", True, "", ("m1", "m3")),
                InstanceStatus(Endpoint("executor", "e-2", "10.0.0.10:50051"), "SERVING", False, "", ("m2",)),
                STATUSES[1]]
    header, *rows = render(statuses).splitlines()
    column = header.split().index("SHARDS")
    assert [r.split()[column] for r in rows] == ["2", "1", "-"]
    items = json.loads(render_json(statuses))["items"]
    assert [i.get("shards") for i in items] == [["m1", "m3"], ["m2"], None]
