"""Karmada fields Flotilla does not act on: each is refused, or admitted with a warning.

Flotilla's promise is that a Karmada user's YAML means what it means in Karmada. A field that
would change what Karmada does but that Flotilla does not build is therefore refused
(`not supported by Flotilla: <path>`) rather than stored and ignored; a field that changes
nothing Flotilla does (deprecated, or only read by a Karmada component Flotilla has no
counterpart of) is admitted with a warning line, as the Kubernetes API server's `Warning:`
headers say it. Both are pure functions of the object, driven by the tables below, which
docs/differences.md lists (a test keeps the two alike).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from flotilla.api.codec import FieldError

UNSUPPORTED = "not supported by Flotilla"
_POLICIES = ("PropagationPolicy", "ClusterPropagationPolicy")
_CLUSTER = ("Cluster",)
_BINDINGS = ("ResourceBinding", "ClusterResourceBinding")



@dataclass(frozen=True)
class KarmadaField:
    """A field of Karmada's API, on these kinds, at this path (Karmada's JSON spelling)."""

    kinds: tuple[str, ...]
    path: str
    why: str


# Fields that change what Karmada does, and that Flotilla does not build.
REFUSED: tuple[KarmadaField, ...] = (
    KarmadaField(_POLICIES, "spec.dependentOverrides",
                 "Karmada waits for the named OverridePolicies before applying the policy; Flotilla does not wait"),
    KarmadaField(_POLICIES, "spec.placement.workloadAffinity",
                 "Karmada's scheduler co-locates or separates workloads by it; Flotilla's scheduler does not read it"),
    KarmadaField(_CLUSTER, "spec.resourceModels",
                 "Karmada's estimator counts replicas by the models' grades; Flotilla's from the member's "
                 "resource summary only"),
    KarmadaField(_BINDINGS, "spec.replicaRequirements.nodeClaim.hardNodeAffinity",
                 "Karmada's estimator counts only the nodes this affinity admits; Flotilla's counts from the "
                 "member's resource summary"),
    KarmadaField(_BINDINGS, "spec.workloadAffinityGroups",
                 "Karmada's scheduler places the binding with (or apart from) its group; Flotilla's does not "
                 "read it"),
)

# Fields that change nothing Flotilla does: admitted, with a warning.
WARNED: tuple[KarmadaField, ...] = (
    KarmadaField(_POLICIES, "spec.association",
                 "deprecated in Karmada, which no longer reads it; propagateDeps propagates dependencies"),
    KarmadaField(_CLUSTER, "spec.impersonatorSecretRef",
                 "Karmada reads it only to proxy requests to the member (karmada-aggregated-apiserver), "
                 "which Flotilla does not have"),
)


def _present(message: Message, path: str) -> bool:
    """Whether the field at the dotted JSON path is set (a list or map non-empty, a scalar not its zero)."""
    head, _, rest = path.partition(".")
    fd = next((f for f in message.DESCRIPTOR.fields if f.json_name == head), None)
    if fd is None:
        return False
    value = getattr(message, fd.name)
    if fd.is_repeated:
        return len(value) > 0
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        if not message.HasField(fd.name):
            return False
        return _present(value, rest) if rest else True
    if rest:
        return False
    return message.HasField(fd.name) if fd.has_presence else bool(value)


def _found(obj: Message, table: tuple[KarmadaField, ...]) -> Iterator[KarmadaField]:
    kind = obj.DESCRIPTOR.name
    return (f for f in table if kind in f.kinds and _present(obj, f.path))


def unsupported_fields(obj: Message) -> list[FieldError]:
    """One error for each field of REFUSED the object sets."""
    return [FieldError(f.path, f"{UNSUPPORTED}: {f.path} ({f.why})") for f in _found(obj, REFUSED)]


def field_warnings(obj: Message) -> list[str]:
    """One `<path>: <why>` line for each field of WARNED the object sets."""
    return [f"{f.path}: {f.why}" for f in _found(obj, WARNED)]
