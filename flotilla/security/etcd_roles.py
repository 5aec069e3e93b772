"""What each identity may read and write in etcd: one etcd role per service, limited to the key
ranges its work needs, as etcd's role-based access control grants them (permissions on key
ranges; with client-certificate auth the certificate's common name is the etcd user).

The store keeps every object under `/flotilla/<resource>/[<namespace>/]<name>` (templates under
`<plural>.<group>`), each service's endpoint records under `/flotilla/endpoints/<service>/` and
its leader election under `/flotilla/election/<service>` (its shared work's members and claims under
`/flotilla/shards/<service>/`, where the taint manager's leader also writes which clusters it admits
for eviction: a decision only the taint manager's identity can write). A range here is etcd's
[key, range_end).

Who gets what, and why:

- webhook: reads and writes every key of the plane: it stores what users apply (member tokens
  included), and serves the plane's API (services/webhook/storage.py), through which Pull agents,
  which hold no etcd credential, keep their Works, Leases, endpoint records and elections.
- executor: reads every object (templates of any kind, policies, the member tokens it applies
  with); writes bindings, Works, templates (claim labels), policies (finalizers) and Events, not
  Clusters, cluster Leases nor the member tokens.
- scheduler, eviction: read Clusters and bindings; write bindings and Events.
- taint_manager: reads Clusters, ClusterTaintPolicies and bindings; writes Clusters (taints),
  bindings and Events.
- status: reads Clusters, the member tokens, cluster Leases, bindings and Works; writes Clusters,
  Works (an unjoined cluster's) and Events.
- sim: nothing but its endpoint records.

Every role also writes its own endpoint records, election key and shard keys, and reads the endpoint registry
(addresses only). Pull agents have no etcd user.
`admin` (and anyone given the `root` role) has everything. Pure: a table in, grants out (tests/unit/test_etcd_roles.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from flotilla.api import registry
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE

ROOT = "/flotilla/"
ROOT_ROLE = "root"
# etcd's Permission.Type.
READ, WRITE, READWRITE = 0, 1, 2


@dataclass(frozen=True, order=True)
class Grant:
    key: str
    range_end: str  # "" for the one key
    permission: int


def prefix_range(prefix: str) -> tuple[str, str]:
    """Every key starting with `prefix` (which ends in "/"): etcd's prefix range end is the
    prefix with its last byte incremented."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def resource(name: str, *namespace: str) -> tuple[str, str]:
    return prefix_range(ROOT + "/".join((name, *namespace)) + "/")


def _minus(whole: tuple[str, str], holes: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """`whole` without the `holes` inside it."""
    pieces, start = [], whole[0]
    for hole_start, hole_end in sorted(holes):
        if hole_start > start:
            pieces.append((start, hole_start))
        start = max(start, hole_end)
    if start < whole[1]:
        pieces.append((start, whole[1]))
    return pieces


EVERYTHING = prefix_range(ROOT)
ENDPOINTS = resource("endpoints")
ELECTIONS = resource("election")
SHARDS = resource("shards")
MEMBER_TOKENS = resource("secrets", CLUSTER_SECRET_NAMESPACE)
_CLUSTERS = resource(registry.CLUSTER.resource)
_BINDINGS = [resource(registry.RESOURCE_BINDING.resource), resource(registry.CLUSTER_RESOURCE_BINDING.resource)]
_WORKS = resource(registry.WORK.resource)
_EVENTS = resource(registry.EVENT.resource)
_LEASES = resource(registry.LEASE.resource, CLUSTER_SECRET_NAMESPACE)
_TAINT_POLICIES = resource(registry.CLUSTER_TAINT_POLICY.resource)
# What holds objects (not the registries of endpoints, elections and shard claims).
OBJECTS = _minus(EVERYTHING, [ENDPOINTS, ELECTIONS, SHARDS])


def _grants(permission: int, ranges: Iterable[tuple[str, str]]) -> list[Grant]:
    return [Grant(start, end, permission) for start, end in ranges]


def _own(name: str) -> list[Grant]:
    """A process's own endpoint records, election key and shard membership and claims
    (flotilla.store.shards), and where the others are (the registry holds addresses only): a
    service finds the webhook there to ask who may call it."""
    return [Grant(*prefix_range(f"{ROOT}endpoints/{name}/"), READWRITE),
            Grant(f"{ROOT}election/{name}", "", READWRITE), Grant(*ENDPOINTS, READ),
            Grant(*prefix_range(f"{ROOT}shards/{name}/"), READWRITE)]


def service_grants(service: str) -> list[Grant]:
    """The permissions of a service's role (see the table above); KeyError for no such service."""
    read, write = _SERVICES[service]
    # Every write is a compare-and-swap, and etcd authorizes a transaction's compares as reads.
    return sorted({*_grants(READ, [r for r in read if r not in write]), *_grants(READWRITE, write), *_own(service)})


_SERVICES: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    "webhook": ([EVERYTHING], [EVERYTHING]),
    "executor": (OBJECTS, _minus(EVERYTHING, [ENDPOINTS, ELECTIONS, SHARDS, MEMBER_TOKENS, _CLUSTERS, _LEASES])),
    "scheduler": ([_CLUSTERS, *_BINDINGS], [*_BINDINGS, _EVENTS]),
    "taint_manager": ([_CLUSTERS, _TAINT_POLICIES, *_BINDINGS], [_CLUSTERS, *_BINDINGS, _EVENTS]),
    "eviction": ([_CLUSTERS, *_BINDINGS], [*_BINDINGS, _EVENTS]),
    "status": ([_CLUSTERS, MEMBER_TOKENS, _LEASES, *_BINDINGS, _WORKS], [_CLUSTERS, _WORKS, _EVENTS]),
    "sim": ([], []),
}
SERVICES = tuple(_SERVICES)



def grants_of(role: str) -> list[Grant]:
    return service_grants(role)
