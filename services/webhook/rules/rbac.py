"""RBAC objects (Role, ClusterRole, RoleBinding, ClusterRoleBinding): what the authorizer needs
them to say (flotilla.security.rbac reads them the same way), and the built-in names kept."""

from __future__ import annotations

from collections.abc import Iterator

from flotilla.api import codec
from flotilla.api.codec import FieldError
from flotilla.api.v1.meta_pb2 import Unstructured
from flotilla.security import rbac


def is_rbac(template: Unstructured) -> bool:
    return template.api_version == rbac.API_VERSION and template.kind in rbac.KINDS


def validate_rbac(template: Unstructured) -> Iterator[FieldError]:
    if template.kind in (rbac.CLUSTER_ROLE, rbac.CLUSTER_ROLE_BINDING) and template.metadata.name in \
            rbac.BOOTSTRAP_NAMES:
        yield FieldError("metadata.name", f"{template.metadata.name!r} is built in (the bootstrap policy) and "
                                          "cannot be replaced; bind it, or aggregate into it with a label")
        return
    doc = codec.to_dict(template)
    try:
        if template.kind in (rbac.ROLE, rbac.CLUSTER_ROLE):
            rbac.role_of(doc)
        else:
            rbac.binding_of(doc)
    except rbac.PolicyError as e:
        yield FieldError(e.path, e.reason)
