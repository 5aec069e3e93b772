"""Label selectors and cluster affinity, with Kubernetes' and Karmada's matching rules.

Shared by everything that picks clusters or objects: the scheduler (which
compiles and caches these per term, see `flotilla.scheduler.plugin_api.AffinityMatcher`),
the ClusterTaintPolicy controller and the detector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2


def requirement_matches(key: str, operator: str, values: frozenset[str], labels: Mapping[str, str]) -> bool:
    # Kubernetes refuses a selector with a malformed requirement; refusing to match is the same.
    if operator == "In":
        return bool(values) and labels.get(key) in values
    if operator == "NotIn":
        return bool(values) and labels.get(key) not in values
    if operator == "Exists":
        return not values and key in labels
    if operator == "DoesNotExist":
        return not values and key not in labels
    return False


def compile_label_selector(selector: meta_pb2.LabelSelector) -> Callable[[Mapping[str, str]], bool]:
    required = dict(selector.match_labels)
    requirements = [(r.key, r.operator, frozenset(r.values)) for r in selector.match_expressions]

    def matches(labels: Mapping[str, str]) -> bool:
        for key, value in required.items():
            if labels.get(key) != value:
                return False
        return all(requirement_matches(k, op, values, labels) for k, op, values in requirements)

    return matches


def label_selector_matches(selector: meta_pb2.LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; an empty selector matches everything."""
    return compile_label_selector(selector)(labels)


def zones_match(operator: str, values: frozenset[str], zones: Iterable[str]) -> bool:
    """Karmada's zone rule: In needs every zone of the cluster among the values."""
    zones = tuple(zones)
    if operator == "In":
        return bool(zones) and all(zone in values for zone in zones)
    if operator == "NotIn":
        return not any(zone in values for zone in zones)
    if operator == "Exists":
        return bool(zones)
    if operator == "DoesNotExist":
        return not zones
    return False


def cluster_zones(cluster: cluster_pb2.Cluster) -> tuple[str, ...]:
    # `zones` supersedes the deprecated `zone`; either names the cluster's zones.
    return tuple(cluster.spec.zones) or ((cluster.spec.zone,) if cluster.spec.zone else ())


def field_selector_matches(selector: policy_pb2.FieldSelector, provider: str, region: str,
                           zones: Iterable[str]) -> bool:
    """provider and region with label-selector semantics on the cluster's fields; zone as `zones_match`."""
    present = {k: v for k, v in (("provider", provider), ("region", region)) if v}
    for req in selector.match_expressions:
        values = frozenset(req.values)
        if req.key == "zone":
            if not zones_match(req.operator, values, zones):
                return False
        elif not requirement_matches(req.key, req.operator, values, present):
            return False
    return True


def cluster_affinity_matches(affinity: policy_pb2.ClusterAffinity, cluster: cluster_pb2.Cluster) -> bool:
    """Karmada's ClusterAffinity (util.ClusterMatches): exclude wins; labelSelector,
    fieldSelector and clusterNames must each match when set."""
    name = cluster.metadata.name
    if name in affinity.exclude:
        return False
    if affinity.HasField("label_selector") and not label_selector_matches(
        affinity.label_selector, cluster.metadata.labels
    ):
        return False
    if affinity.HasField("field_selector") and not field_selector_matches(
        affinity.field_selector, cluster.spec.provider, cluster.spec.region, cluster_zones(cluster)
    ):
        return False
    return not affinity.cluster_names or name in affinity.cluster_names
