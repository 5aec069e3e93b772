"""Mutating admission: the defaults Karmada's webhook, CRDs and aggregated API server fill in.

Runs before validation on every CREATE and UPDATE. Kinds without an entry
in `_DEFAULTERS` are stored as written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from google.protobuf.message import Message

from flotilla.api.v1.cluster_pb2 import Cluster
from flotilla.api.v1.policy_pb2 import ClusterPropagationPolicy, OverridePolicy, PropagationPolicy
from services.webhook.rules.cluster import default_cluster
from services.webhook.rules.propagation import default_policy
from services.webhook.rules.selectors import default_selector_namespaces


@dataclass(frozen=True)
class AdmissionConfig:
    # --default-not-ready-toleration-seconds / --default-unreachable-toleration-seconds; 0 adds no toleration.
    default_not_ready_toleration_seconds: int = 600
    default_unreachable_toleration_seconds: int = 600
    # --allow-no-execute-taint-policy: on in Flotilla, whose failover relies on such policies
    # (docs/differences.md, decision 3).
    allow_no_execute_taint_policy: bool = True

    def __post_init__(self) -> None:
        for name in ("default_not_ready_toleration_seconds", "default_unreachable_toleration_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (0 disables the default toleration)")


Defaulter = Callable[[Any, Any, AdmissionConfig, datetime], None]


def _cluster(obj: Cluster, old: Cluster | None, config: AdmissionConfig, now: datetime) -> None:
    default_cluster(obj, old, now)


def _policy(
    obj: PropagationPolicy | ClusterPropagationPolicy,
    old: PropagationPolicy | ClusterPropagationPolicy | None,
    config: AdmissionConfig,
    now: datetime,
) -> None:
    default_policy(obj, old, config.default_not_ready_toleration_seconds, config.default_unreachable_toleration_seconds)


def _override_policy(obj: OverridePolicy, old: OverridePolicy | None, config: AdmissionConfig, now: datetime) -> None:
    # Karmada's mutating webhook: an OverridePolicy's selectors are of its own namespace.
    default_selector_namespaces(obj.spec.resource_selectors, obj.metadata.namespace)


_DEFAULTERS: dict[type[Message], Defaulter] = {
    Cluster: _cluster,
    PropagationPolicy: _policy,
    ClusterPropagationPolicy: _policy,
    OverridePolicy: _override_policy,
}


def default_object(obj: Message, old: Message | None, config: AdmissionConfig, now: datetime) -> None:
    """Mutates obj in place; old is the stored object on UPDATE, None on CREATE."""
    defaulter = _DEFAULTERS.get(type(obj))
    if defaulter is not None:
        defaulter(obj, old if type(old) is type(obj) else None, config, now)
