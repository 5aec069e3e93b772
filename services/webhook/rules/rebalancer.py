"""WorkloadRebalancer admission (apps.karmada.io/v1alpha1): what Karmada's CRD schema requires of
it. At least one workload, each with apiVersion, kind and name (namespace empty for a
cluster-scoped one), and a ttlSecondsAfterFinished that is not negative."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.apps_pb2 import WorkloadRebalancer
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, invalid, required
from services.webhook.rules.kinds import api_version_problem, kind_problem


def validate_workload_rebalancer(rebalancer: WorkloadRebalancer) -> Iterator[FieldError]:
    spec = rebalancer.spec
    path = child("spec", "workloads")
    if not spec.workloads:
        yield FieldError(path, "must name at least one workload")
    for i, workload in enumerate(spec.workloads):
        at = index(path, i)
        for field, value, problem in (("apiVersion", workload.api_version, api_version_problem),
                                      ("kind", workload.kind, kind_problem)):
            if not value:
                yield required(child(at, field))
            elif reason := problem(value):
                yield invalid(child(at, field), value, reason)
        if not workload.name:
            yield required(child(at, "name"))
        else:
            yield from check(child(at, "name"), workload.name, names.path_segment)
        if workload.namespace:
            yield from check(child(at, "namespace"), workload.namespace, names.dns1123_label)
    if spec.HasField("ttl_seconds_after_finished") and spec.ttl_seconds_after_finished < 0:
        yield invalid(child("spec", "ttlSecondsAfterFinished"), spec.ttl_seconds_after_finished,
                      "must be greater than or equal to 0")
