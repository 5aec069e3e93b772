"""`spec.failover`: application and cluster failover behaviour, purge modes and state preservation."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api.codec import FieldError
from flotilla.api.v1.policy_pb2 import (
    ApplicationFailoverBehavior,
    ClusterFailoverBehavior,
    Failback,
    PropagationSpec,
    StatePreservation,
)
from flotilla.rules.jsonpath_template import jsonpath_template_problem
from services.webhook.rules import names
from services.webhook.rules.fields import check, child, index, invalid, required, unsupported

PURGE_DIRECTLY = "Directly"
PURGE_GRACEFULLY = "Gracefully"
PURGE_NEVER = "Never"
# Karmada ≤ v1.18 spellings; v1.19 removed them, Flotilla still reads them.
DEPRECATED_PURGE_MODES = {"Immediately": PURGE_DIRECTLY, "Graciously": PURGE_GRACEFULLY}
APPLICATION_PURGE_MODES = (PURGE_DIRECTLY, PURGE_GRACEFULLY, PURGE_NEVER)
# Never would keep a workload on a cluster that is gone; only an application can choose it.
CLUSTER_PURGE_MODES = (PURGE_DIRECTLY, PURGE_GRACEFULLY)
HEALTHY_STATES = ("", "Healthy")

DEFAULT_GRACE_PERIOD_SECONDS = 600
DEFAULT_DECISION_TOLERATION_SECONDS = 300
DEFAULT_FAILBACK_STABILIZATION_WINDOW_SECONDS = 600
DEFAULT_FAILBACK_MAX_CONCURRENT = 1


def canonical_purge_mode(mode: str) -> str:
    return DEPRECATED_PURGE_MODES.get(mode, mode)


def default_failover(spec: PropagationSpec) -> None:
    if not spec.HasField("failover"):
        return
    failover = spec.failover
    if failover.HasField("application"):
        default_application_failover(failover.application)
    if failover.HasField("cluster"):
        failover.cluster.purge_mode = canonical_purge_mode(failover.cluster.purge_mode) or PURGE_GRACEFULLY
        if failover.cluster.HasField("failback"):
            default_failback(failover.cluster.failback)


def default_failback(failback: Failback) -> None:
    if not failback.HasField("enabled"):
        failback.enabled = False
    if not failback.HasField("stabilization_window_seconds"):
        failback.stabilization_window_seconds = DEFAULT_FAILBACK_STABILIZATION_WINDOW_SECONDS
    if not failback.HasField("max_concurrent"):
        failback.max_concurrent = DEFAULT_FAILBACK_MAX_CONCURRENT


def default_application_failover(application: ApplicationFailoverBehavior) -> None:
    application.purge_mode = canonical_purge_mode(application.purge_mode) or PURGE_GRACEFULLY
    if application.purge_mode == PURGE_GRACEFULLY and not application.HasField("grace_period_seconds"):
        application.grace_period_seconds = DEFAULT_GRACE_PERIOD_SECONDS
    # Only inside a given decisionConditions, as the CRD defaults it: a
    # missing one is an error, not something to invent.
    if application.HasField("decision_conditions") and not application.decision_conditions.HasField(
        "toleration_seconds"
    ):
        application.decision_conditions.toleration_seconds = DEFAULT_DECISION_TOLERATION_SECONDS


def validate_failover(spec: PropagationSpec, path: str) -> Iterator[FieldError]:
    """`path` is the spec's: the propagateDeps error belongs to a sibling of `failover`."""
    if not spec.HasField("failover"):
        return
    failover_path = child(path, "failover")
    if spec.failover.HasField("application"):
        if not spec.propagate_deps:
            # The application failover controller only acts on bindings that
            # carry their dependencies along (docs/karmada-rules.md §12.1).
            yield FieldError(child(path, "propagateDeps"), "application failover is set, propagateDeps must be true")
        yield from validate_application_failover(spec.failover.application, child(failover_path, "application"))
    if spec.failover.HasField("cluster"):
        yield from validate_cluster_failover(spec.failover.cluster, child(failover_path, "cluster"))


def validate_application_failover(application: ApplicationFailoverBehavior, path: str) -> Iterator[FieldError]:
    if application.HasField("pre_conditions"):
        conditions, conditions_path = application.pre_conditions, child(path, "preConditions")
        if conditions.HasField("delay_seconds") and conditions.delay_seconds < 0:
            yield invalid(
                child(conditions_path, "delaySeconds"), conditions.delay_seconds, "must be greater than or equal to 0"
            )
        if conditions.healthy_state not in HEALTHY_STATES:
            yield unsupported(child(conditions_path, "healthyState"), conditions.healthy_state, HEALTHY_STATES[1:])
    decision_path = child(path, "decisionConditions")
    if not application.HasField("decision_conditions"):
        yield required(decision_path)
    elif application.decision_conditions.toleration_seconds < 0:
        yield invalid(
            child(decision_path, "tolerationSeconds"),
            application.decision_conditions.toleration_seconds,
            "must be greater than or equal to 0",
        )
    yield from _purge_mode(application.purge_mode, APPLICATION_PURGE_MODES, child(path, "purgeMode"))
    grace_path = child(path, "gracePeriodSeconds")
    if application.HasField("grace_period_seconds"):
        if application.purge_mode != PURGE_GRACEFULLY:
            yield FieldError(grace_path, "only allowed when purgeMode is Gracefully")
        elif application.grace_period_seconds <= 0:
            yield invalid(grace_path, application.grace_period_seconds, "must be greater than 0")
    elif application.purge_mode == PURGE_GRACEFULLY:
        yield FieldError(grace_path, "required when purgeMode is Gracefully")
    if application.HasField("block_predecessor_seconds") and application.block_predecessor_seconds < 0:
        yield invalid(
            child(path, "blockPredecessorSeconds"),
            application.block_predecessor_seconds,
            "must be greater than or equal to 0",
        )
    if application.HasField("state_preservation"):
        yield from validate_state_preservation(application.state_preservation, child(path, "statePreservation"))


def validate_cluster_failover(cluster: ClusterFailoverBehavior, path: str) -> Iterator[FieldError]:
    yield from _purge_mode(cluster.purge_mode, CLUSTER_PURGE_MODES, child(path, "purgeMode"))
    if cluster.HasField("state_preservation"):
        yield from validate_state_preservation(cluster.state_preservation, child(path, "statePreservation"))
    if cluster.HasField("failback"):
        yield from validate_failback(cluster.failback, child(path, "failback"))


def validate_failback(failback: Failback, path: str) -> Iterator[FieldError]:
    window = failback.stabilization_window_seconds
    if failback.HasField("stabilization_window_seconds") and window < 0:
        yield invalid(child(path, "stabilizationWindowSeconds"), window, "must be greater than or equal to 0")
    if failback.HasField("max_concurrent") and failback.max_concurrent < 1:
        yield invalid(child(path, "maxConcurrent"), failback.max_concurrent, "must be greater than or equal to 1")


def validate_state_preservation(preservation: StatePreservation, path: str) -> Iterator[FieldError]:
    for i, rule in enumerate(preservation.rules):
        rule_path = index(child(path, "rules"), i)
        alias_path = child(rule_path, "aliasLabelName")
        if not rule.alias_label_name:
            yield required(alias_path)
        else:
            # The preserved value is injected as a label under this name.
            yield from check(alias_path, rule.alias_label_name, names.qualified_name)
        json_path = child(rule_path, "jsonPath")
        if not rule.json_path:
            yield required(json_path)
        else:
            # Kubernetes' JSONPath only, no regular expression nor function: the template runs
            # over the status a member reports, on the failover services' event loops.
            problem = jsonpath_template_problem(rule.json_path)
            if problem:
                yield invalid(json_path, rule.json_path, problem)


def _purge_mode(mode: str, allowed: tuple[str, ...], path: str) -> Iterator[FieldError]:
    if not mode:
        yield required(path)
    elif mode not in allowed:
        yield unsupported(path, mode, allowed)
