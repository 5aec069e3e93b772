"""Validating admission: every problem of an object, each with the field path a user can find.

Runs after `default_object`, so it sees Karmada's defaults filled in and the
deprecated purge-mode spellings already rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf.message import Message

from flotilla.api import registry
from flotilla.api.codec import FieldError
from flotilla.api.v1.apps_pb2 import WorkloadRebalancer
from flotilla.api.v1.cluster_pb2 import Cluster
from flotilla.api.v1.config_pb2 import ResourceInterpreterCustomization
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.api.v1.policy_pb2 import (
    ClusterOverridePolicy,
    ClusterPropagationPolicy,
    ClusterTaintPolicy,
    OverridePolicy,
    PropagationPolicy,
)
from flotilla.store.base import meta_of
from services.webhook.defaulting import AdmissionConfig
from services.webhook.rules.bounds import seconds_out_of_bounds
from services.webhook.rules.cluster import cluster_name, validate_cluster
from services.webhook.rules.interpreter import validate_interpreter_customization
from services.webhook.rules.karmada_fields import unsupported_fields
from services.webhook.rules.kinds import selector_kind_problems, template_kind_problems
from services.webhook.rules.metadata import NameRule, validate_metadata
from services.webhook.rules.names import dns1123_subdomain
from services.webhook.rules.override import validate_override_policy
from services.webhook.rules.propagation import validate_policy
from services.webhook.rules.rebalancer import validate_workload_rebalancer
from services.webhook.rules.taint_policy import validate_cluster_taint_policy
from services.webhook.rules.template import validate_template

Validator = Callable[[Any, Any, AdmissionConfig], Iterable[FieldError]]

_VALIDATORS: dict[type[Message], Validator] = {
    Cluster: lambda obj, old, config: validate_cluster(obj),
    PropagationPolicy: lambda obj, old, config: validate_policy(obj, old),
    ClusterPropagationPolicy: lambda obj, old, config: validate_policy(obj, old),
    ClusterTaintPolicy: lambda obj, old, config: validate_cluster_taint_policy(
        obj, config.allow_no_execute_taint_policy
    ),
    ResourceInterpreterCustomization: lambda obj, old, config: validate_interpreter_customization(obj),
    WorkloadRebalancer: lambda obj, old, config: validate_workload_rebalancer(obj),
    OverridePolicy: lambda obj, old, config: validate_override_policy(obj),
    ClusterOverridePolicy: lambda obj, old, config: validate_override_policy(obj),
}

# The es-namespace `karmada-es-<cluster>` is made from a Cluster's name.
_NAME_RULES: dict[type[Message], NameRule] = {Cluster: cluster_name}


def validate_object(obj: Message, old: Message | None, config: AdmissionConfig) -> list[FieldError]:
    """Every problem, each with the field path; [] when valid. Runs after default_object."""
    if isinstance(obj, Unstructured):
        # A kind not spelled as Kubernetes spells one is refused before anything is read from it.
        return list(template_kind_problems(obj)) or list(validate_template(obj))
    resource_type = registry.for_object(obj)
    errors = list(
        validate_metadata(
            meta_of(obj),
            resource_type.namespaced,
            _NAME_RULES.get(type(obj), dns1123_subdomain),
        )
    )
    validator = _VALIDATORS.get(type(obj))
    if validator is not None:
        errors.extend(validator(obj, old if type(old) is type(obj) else None, config))
    errors.extend(seconds_out_of_bounds(obj))
    # A Karmada field Flotilla does not act on is refused, never stored and ignored.
    errors.extend(unsupported_fields(obj))
    if isinstance(obj, PropagationPolicy | ClusterPropagationPolicy):
        errors.extend(selector_kind_problems(obj))
    return errors
