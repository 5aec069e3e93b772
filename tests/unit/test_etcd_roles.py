"""Each service's etcd role as a table: which keys it may read and write."""

from __future__ import annotations

import pytest

from flotilla.security import etcd_roles
from flotilla.security.etcd_roles import READ, READWRITE, WRITE, Grant, grants_of


def allowed(grants: list[Grant], key: str, permission: int) -> bool:
    for grant in grants:
        inside = key == grant.key if not grant.range_end else grant.key <= key < grant.range_end
        if inside and (grant.permission == READWRITE or grant.permission == permission):
            return True
    return False


TOKEN = "/flotilla/secrets/karmada-cluster/member1"
USER_SECRET = "/flotilla/secrets/default/db-password"
BINDING = "/flotilla/resourcebindings/default/nginx-deployment"
CLUSTER = "/flotilla/clusters/member1"
WORK1 = "/flotilla/works/karmada-es-member1/nginx"
WORK3 = "/flotilla/works/karmada-es-member3/nginx"
DEPLOYMENT = "/flotilla/deployments.apps/default/nginx"
POLICY = "/flotilla/propagationpolicies/default/nginx"

CASES: list[tuple[str, str, int, bool]] = [
    # The scheduler: bindings, not Secrets, not another's election.
    ("scheduler", BINDING, WRITE, True),
    ("scheduler", CLUSTER, READ, True),
    ("scheduler", CLUSTER, WRITE, False),
    ("scheduler", TOKEN, READ, False),
    ("scheduler", USER_SECRET, WRITE, False),
    ("scheduler", "/flotilla/election/scheduler", WRITE, True),
    ("scheduler", "/flotilla/election/executor", WRITE, False),
    ("scheduler", "/flotilla/endpoints/webhook/x", WRITE, False),
    # The status service reads the member tokens; it does not write policies.
    ("status", TOKEN, READ, True),
    ("status", TOKEN, WRITE, False),
    ("status", POLICY, WRITE, False),
    ("status", CLUSTER, WRITE, True),
    # The executor reads the tokens it applies with but cannot change them or the Clusters.
    ("executor", TOKEN, READ, True),
    ("executor", TOKEN, WRITE, False),
    ("executor", USER_SECRET, WRITE, True),
    ("executor", CLUSTER, WRITE, False),
    ("executor", WORK1, WRITE, True),
    ("executor", DEPLOYMENT, WRITE, True),
    ("executor", "/flotilla/election/executor", WRITE, True),
    ("executor", "/flotilla/election/scheduler", WRITE, False),
    # The taint manager taints Clusters.
    ("taint_manager", CLUSTER, WRITE, True),
    ("taint_manager", TOKEN, READ, False),
    # The simulator: nothing of the plane's.
    ("sim", CLUSTER, READ, False),
    ("sim", BINDING, READ, False),
    ("sim", "/flotilla/endpoints/sim/x", WRITE, True),
    # The webhook stores what users apply, and keeps Pull agents' records through the plane's API.
    ("webhook", TOKEN, WRITE, True),
    ("webhook", POLICY, WRITE, True),
    ("webhook", "/flotilla/endpoints/agent-member3/x", WRITE, True),
    ("webhook", "/flotilla/election/agent-member3", WRITE, True),
    ("webhook", "/other/key", READ, False),
]


@pytest.mark.parametrize(("role", "key", "permission", "expected"), CASES,
                         ids=[f"{r}-{'rw'[p == WRITE]}-{k}" for r, k, p, _ in CASES])
def test_role_grants(role: str, key: str, permission: int, expected: bool) -> None:
    assert allowed(grants_of(role), key, permission) is expected


def test_prefix_ranges_end_where_the_prefix_does() -> None:
    assert etcd_roles.prefix_range("/flotilla/works/") == ("/flotilla/works/", "/flotilla/works0")
    # A role on member1's Works must not reach member10's.
    assert not allowed([etcd_roles.Grant(*etcd_roles.resource("works", "karmada-es-member1"), WRITE)],
                       "/flotilla/works/karmada-es-member10/x", WRITE)


def test_every_service_has_a_role() -> None:
    from flotilla.api.owners import SERVICES
    assert set(SERVICES) <= set(etcd_roles.SERVICES)
