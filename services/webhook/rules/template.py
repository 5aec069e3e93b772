"""Resource templates (Deployments, ConfigMaps, any CRD's objects): only what any Kubernetes object needs."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api import registry
from flotilla.api.codec import FieldError
from flotilla.api.v1.meta_pb2 import Unstructured
from services.webhook.rules import names
from services.webhook.rules.fields import required
from services.webhook.rules.metadata import NameRule, validate_metadata
from services.webhook.rules.rbac import is_rbac, validate_rbac

# RBAC objects are named like `system:controller:x`; the API server only asks
# that their names fit in a URL path.
_PATH_SEGMENT_NAMED_GROUPS = frozenset({"rbac.authorization.k8s.io"})


def validate_template(template: Unstructured) -> Iterator[FieldError]:
    if not template.api_version:
        yield required("apiVersion")
    if not template.kind:
        yield required("kind")
    resource_type = None
    if template.api_version and template.kind:
        try:
            resource_type = registry.for_object(template)
        except registry.UnknownResourceError as e:
            yield FieldError("apiVersion", str(e))
    # Without a known kind the scope is unknown: check the name, not the namespace.
    namespaced = resource_type is not None and resource_type.namespaced
    name_rule = template_name_rule(resource_type.group if resource_type is not None else "")
    yield from validate_metadata(template.metadata, namespaced, name_rule)
    if is_rbac(template):
        yield from validate_rbac(template)


def template_name_rule(group: str) -> NameRule:
    return names.path_segment if group in _PATH_SEGMENT_NAMED_GROUPS else names.dns1123_subdomain
