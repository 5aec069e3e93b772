"""Label selectors and cluster affinity, with Kubernetes' and Karmada's matching rules.

Shared by everything that picks clusters or objects: the scheduler, the
ClusterTaintPolicy controller, the detector.
"""

from __future__ import annotations

from collections.abc import Mapping

from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2


def label_selector_matches(selector: meta_pb2.LabelSelector, labels: Mapping[str, str]) -> bool:
    """matchLabels AND every matchExpression (In, NotIn, Exists, DoesNotExist).

    An empty selector matches everything, as in Kubernetes.
    """
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In":
            if not present or labels[req.key] not in req.values:
                return False
        elif req.operator == "NotIn":
            if present and labels[req.key] in req.values:
                return False
        elif req.operator == "Exists":
            if not present:
                return False
        elif req.operator == "DoesNotExist":
            if present:
                return False
        else:
            return False
    return True


def _cluster_field(cluster: cluster_pb2.Cluster, key: str) -> list[str]:
    spec = cluster.spec
    if key == "provider":
        return [spec.provider] if spec.provider else []
    if key == "region":
        return [spec.region] if spec.region else []
    if key == "zone":
        # `zones` supersedes the deprecated `zone`; either names the cluster's zones.
        return list(spec.zones) or ([spec.zone] if spec.zone else [])
    return []


def field_selector_matches(selector: policy_pb2.FieldSelector, cluster: cluster_pb2.Cluster) -> bool:
    for req in selector.match_expressions:
        values = _cluster_field(cluster, req.key)
        if req.operator == "In":
            if not any(v in req.values for v in values):
                return False
        elif req.operator == "NotIn":
            if any(v in req.values for v in values):
                return False
        else:
            return False
    return True


def cluster_affinity_matches(affinity: policy_pb2.ClusterAffinity, cluster: cluster_pb2.Cluster) -> bool:
    """Karmada's ClusterAffinity: exclude wins; clusterNames, labelSelector and fieldSelector are ANDed."""
    name = cluster.metadata.name
    if name in affinity.exclude:
        return False
    if affinity.cluster_names and name not in affinity.cluster_names:
        return False
    if affinity.HasField("label_selector") and not label_selector_matches(
        affinity.label_selector, cluster.metadata.labels
    ):
        return False
    return not (affinity.HasField("field_selector") and not field_selector_matches(affinity.field_selector, cluster))
