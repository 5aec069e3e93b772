"""What a Pull agent may do: its own cluster's objects and nothing of any other member's, as
Kubernetes' Node authorizer and NodeRestriction admission limit a kubelet to its own node.

An agent is the user `agent-<cluster>` in the group `system:flotilla:agents` (its certificate's
CN and O, issued by the plane's CA). For one cluster it may:

- read Clusters (its informer lists them all) and ResourceInterpreterCustomizations;
- update its own Cluster and that Cluster's status (through the storage API, which writes no
  object's content: flotilla.security.storage_access.write_refusal; taints, labels, endpoint and
  credentials are the plane's to set);
- read its Lease in `karmada-cluster`, create and renew it;
- read the Works of its execution namespace `karmada-es-<cluster>` and update them (their
  status and finalizers, as above);
- write Events anywhere (as a kubelet may);
- hold its own endpoint record and leader election (`agent-<cluster>`) and leases of the store.

Anything else falls through to RBAC, where an administrator may grant more. Pure
(tests/unit/test_agents.py).
"""

from __future__ import annotations

import functools
from typing import Any

from flotilla.api import registry
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE, EXECUTION_NAMESPACE_PREFIX
from flotilla.security import rbac
from flotilla.security.storage_access import ELECTIONS, ENDPOINTS, STORE_LEASES, SYSTEM_GROUP

GROUP = "system:flotilla:agents"
USER_PREFIX = "agent-"
READ = ("get", "list", "watch")


def cluster_of(user: rbac.User) -> str:
    """The cluster an agent serves ("" for a user that is not an agent)."""
    if GROUP not in user.groups or not user.name.startswith(USER_PREFIX):
        return ""
    return user.name.removeprefix(USER_PREFIX)


def _rule(verbs: tuple[str, ...], rt: registry.ResourceType[Any], *, names: tuple[str, ...] = (),
          subresource: str = "") -> rbac.Rule:
    resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
    return rbac.Rule.of(verbs, [rt.group], [resource], names)


@functools.lru_cache(maxsize=4096)
def policy_for(cluster: str) -> rbac.Policy:
    """The agent's rules as RBAC objects: one ClusterRole and one Role, bound to it alone."""
    user = rbac.Subject("User", USER_PREFIX + cluster)
    service = USER_PREFIX + cluster
    cluster_wide = rbac.RoleDef(f"system:flotilla:agent:{cluster}", rules=(
        _rule(READ, registry.CLUSTER),
        _rule(("update",), registry.CLUSTER, names=(cluster,)),
        _rule(("update",), registry.CLUSTER, names=(cluster,), subresource="status"),
        _rule(READ, registry.RESOURCE_INTERPRETER_CUSTOMIZATION),
        _rule(("create", "update"), registry.EVENT),
        rbac.Rule.of(("get", "list", "watch", "create", "update", "delete"), [SYSTEM_GROUP], [ENDPOINTS, ELECTIONS],
                     [service]),
        rbac.Rule.of(("create",), [SYSTEM_GROUP], [STORE_LEASES]),
    ))
    own_lease = rbac.RoleDef("system:flotilla:agent:lease", CLUSTER_SECRET_NAMESPACE, rules=(
        _rule(("get", "create", "update"), registry.LEASE, names=(cluster,)),
    ))
    works = rbac.RoleDef("system:flotilla:agent:works", EXECUTION_NAMESPACE_PREFIX + cluster, rules=(
        _rule(READ, registry.WORK),
        _rule(("update",), registry.WORK),
        _rule(("update",), registry.WORK, subresource="status"),
    ))
    bindings = [rbac.BindingDef(cluster_wide.name, rbac.CLUSTER_ROLE, cluster_wide.name, (user,))]
    bindings += [rbac.BindingDef(role.name, rbac.ROLE, role.name, (user,), role.namespace)
                 for role in (own_lease, works)]
    return rbac.Policy([cluster_wide, own_lease, works], bindings, bootstrap=False)


def authorize(user: rbac.User, request: rbac.Request) -> rbac.Decision | None:
    """Allowed when the request is one of the agent's own; None (no opinion) otherwise."""
    cluster = cluster_of(user)
    if not cluster:
        return None
    decision = policy_for(cluster).authorize(user, request)
    if not decision.allowed:
        return None
    return rbac.Decision(True, f"agent of cluster {cluster!r}")
