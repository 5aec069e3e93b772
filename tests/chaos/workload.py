"""The workload a chaos test fails over: `count` one-replica Deployments selected by one
PropagationPolicy onto two Push-mode members (Divided, Aggregated: each binding on one cluster),
so a failed member's bindings have exactly one place to go."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

NAMESPACE = "default"
_AGGREGATED = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
_DUPLICATED = {
    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
    "clusterTolerations": [{"key": f"cluster.karmada.io/{key}", "operator": "Exists", "effect": "NoExecute"}
                           for key in ("not-ready", "unreachable")],
}


@dataclass(frozen=True)
class Workload:
    tag: str
    count: int
    clusters: tuple[str, ...] = ("member1", "member2")
    # Every binding on every cluster, each tolerating NotReady and unreachable clusters for
    # ever (nothing is evicted), instead of one cluster each.
    duplicated: bool = False

    @property
    def names(self) -> list[str]:
        return [f"{self.tag}-{i:03d}" for i in range(self.count)]

    @property
    def keys(self) -> list[str]:
        """The ResourceBindings' keys."""
        return [f"{NAMESPACE}/{name}-deployment" for name in self.names]

    def documents(self) -> str:
        policy = {
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": self.tag, "namespace": NAMESPACE},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                            "labelSelector": {"matchLabels": {"chaos": self.tag}}}],
                     "placement": {"clusterAffinity": {"clusterNames": list(self.clusters)},
                                   **(_DUPLICATED if self.duplicated else _AGGREGATED)}},
        }
        deployments = [{
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"chaos": self.tag}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
        } for name in self.names]
        return yaml.safe_dump_all([policy, *deployments])
