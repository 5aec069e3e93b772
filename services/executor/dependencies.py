"""propagateDeps: what a workload depends on, and the attached bindings that carry those dependents.

Pure. A workload's dependencies are the ConfigMaps, Secrets, ServiceAccounts and
PersistentVolumeClaims its pod template references (and an Ingress's TLS Secrets), as
Karmada's default interpreter reads them (`GetDependencies`). Each dependent gets an
*attached* ResourceBinding, as Karmada's dependencies distributor builds it: named after
the dependent, owned by it, labelled `resourcebinding.karmada.io/depended-by-<hash>` for
every workload binding that needs it, and listing those bindings and their clusters in
`spec.requiredBy` — so the binding controller sends the dependent wherever any of its
workloads runs, and nothing schedules it on its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from flotilla.api import keys, registry
from flotilla.api.bindings import Binding
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import BINDING_FINALIZER, DEPENDED_BY_LABEL_PREFIX
from flotilla.rules.binding_builder import template_content

_WORKLOADS_WITH_POD_TEMPLATE = frozenset({
    ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"), ("batch/v1", "Job"),
})
_CONTAINER_GROUPS = ("initContainers", "containers", "ephemeralContainers")
# Volume sources whose credentials live in a Secret named by `secretRef.name`.
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")


class Dependency(NamedTuple):
    api_version: str
    kind: str
    namespace: str
    name: str


def pod_spec(api_version: str, kind: str, content: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec inside a workload (None for kinds that have none)."""
    spec = _dict(content.get("spec"))
    if (api_version, kind) == ("v1", "Pod"):
        return spec
    if (api_version, kind) == ("batch/v1", "CronJob"):
        spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
    elif (api_version, kind) not in _WORKLOADS_WITH_POD_TEMPLATE:
        return None
    return _dict(_dict(spec.get("template")).get("spec"))


def dependencies(template: meta_pb2.Unstructured) -> list[Dependency]:
    """ConfigMaps, then Secrets, then ServiceAccounts, then PVCs, each sorted by name; for an
    Ingress, its TLS Secrets."""
    content = template_content(template)
    namespace = template.metadata.namespace
    if (template.api_version, template.kind) == ("networking.k8s.io/v1", "Ingress"):
        tls = _list(_dict(content.get("spec")).get("tls"))
        return [Dependency("v1", "Secret", namespace, name)
                for name in sorted({_name(t, "secretName") for t in tls}) if name]
    spec = pod_spec(template.api_version, template.kind, content)
    if spec is None:
        return []
    found: list[Dependency] = []
    for kind, names in (("ConfigMap", _config_maps(spec)), ("Secret", _secrets(spec)),
                        ("ServiceAccount", _service_accounts(spec)), ("PersistentVolumeClaim", _claims(spec))):
        found.extend(Dependency("v1", kind, namespace, name) for name in sorted(set(names)) if name)
    return found


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for group in _CONTAINER_GROUPS:
        yield from _list(spec.get(group))


def _name(value: Any, field: str = "name") -> str:
    name = _dict(value).get(field)
    return name if isinstance(name, str) else ""


def _config_maps(spec: Mapping[str, Any]) -> Iterator[str]:
    for volume in _list(spec.get("volumes")):
        yield _name(volume.get("configMap"))
        for source in _list(_dict(volume.get("projected")).get("sources")):
            yield _name(source.get("configMap"))
    for container in _containers(spec):
        for env in _list(container.get("env")):
            yield _name(_dict(env.get("valueFrom")).get("configMapKeyRef"))
        for env_from in _list(container.get("envFrom")):
            yield _name(env_from.get("configMapRef"))


def _secrets(spec: Mapping[str, Any]) -> Iterator[str]:
    for pull in _list(spec.get("imagePullSecrets")):
        yield _name(pull)
    for volume in _list(spec.get("volumes")):
        yield _name(volume.get("secret"), "secretName")
        yield _name(volume.get("azureFile"), "secretName")
        yield _name(_dict(volume.get("csi")).get("nodePublishSecretRef"))
        for source in _SECRET_REF_VOLUMES:
            yield _name(_dict(volume.get(source)).get("secretRef"))
        for projected in _list(_dict(volume.get("projected")).get("sources")):
            yield _name(projected.get("secret"))
    for container in _containers(spec):
        for env in _list(container.get("env")):
            yield _name(_dict(env.get("valueFrom")).get("secretKeyRef"))
        for env_from in _list(container.get("envFrom")):
            yield _name(env_from.get("secretRef"))


def _service_accounts(spec: Mapping[str, Any]) -> Iterator[str]:
    # Every namespace has its own "default" account: nothing to propagate.
    name = spec.get("serviceAccountName")
    if isinstance(name, str) and name != "default":
        yield name


def _claims(spec: Mapping[str, Any]) -> Iterator[str]:
    for volume in _list(spec.get("volumes")):
        yield _name(volume.get("persistentVolumeClaim"), "claimName")


# -- attached bindings ---------------------------------------------------------------------


def binding_reference_key(namespace: str, name: str) -> str:
    """Karmada's GenerateBindingReferenceKey: SafeEncode(FNV-32a) of `ns/name` as
    `hashutil.DeepHashObject` prints a Go string (`(string)ns/name`)."""
    reference = f"{namespace}/{name}" if namespace else name
    return keys.safe_encode(str(keys.fnv32a(f"(string){reference}".encode())))


def depended_by_label(namespace: str, name: str) -> tuple[str, str]:
    """The label an attached binding carries for each workload binding that needs it."""
    return DEPENDED_BY_LABEL_PREFIX + binding_reference_key(namespace, name), f"{namespace}_{name}"


def depended_by(binding: Binding) -> list[str]:
    """The depended-by label keys of a binding (one per workload binding needing it)."""
    return [k for k in binding.metadata.labels if k.startswith(DEPENDED_BY_LABEL_PREFIX)]


def _resource_of(dependent: meta_pb2.Unstructured) -> work_pb2.ObjectReference:
    meta = dependent.metadata
    return work_pb2.ObjectReference(api_version=dependent.api_version, kind=dependent.kind, namespace=meta.namespace,
                                    name=meta.name, uid=meta.uid, resource_version=meta.resource_version)


def _snapshot(independent: work_pb2.ResourceBinding) -> work_pb2.BindingSnapshot:
    return work_pb2.BindingSnapshot(namespace=independent.metadata.namespace, name=independent.metadata.name,
                                    clusters=independent.spec.clusters)


def attached_binding(independent: work_pb2.ResourceBinding, dependent: meta_pb2.Unstructured,
                     permanent_id_label: str, permanent_id: str) -> work_pb2.ResourceBinding:
    """A new attached binding for `dependent`, required by `independent` (Karmada's buildAttachedBinding)."""
    meta = dependent.metadata
    binding = work_pb2.ResourceBinding(api_version=registry.BINDING_API, kind=registry.RESOURCE_BINDING.kind)
    binding.metadata.name = keys.binding_name(meta.name, dependent.kind)
    binding.metadata.namespace = meta.namespace
    binding.metadata.finalizers.append(BINDING_FINALIZER)
    label, value = depended_by_label(independent.metadata.namespace, independent.metadata.name)
    binding.metadata.labels[label] = value
    binding.metadata.labels[permanent_id_label] = permanent_id
    if meta.uid:
        binding.metadata.owner_references.add(api_version=dependent.api_version, kind=dependent.kind, name=meta.name,
                                               uid=meta.uid, controller=True, block_owner_deletion=True)
    binding.spec.resource.CopyFrom(_resource_of(dependent))
    binding.spec.required_by.append(_snapshot(independent))
    binding.spec.conflict_resolution = independent.spec.conflict_resolution
    return binding


def attach(existing: work_pb2.ResourceBinding, independent: work_pb2.ResourceBinding,
           dependent: meta_pb2.Unstructured) -> work_pb2.ResourceBinding:
    """`existing` with `independent`'s snapshot set to its current clusters (Karmada's
    mergeBindingSnapshot), its depended-by label, and the dependent's current resource reference."""
    merged = work_pb2.ResourceBinding()
    merged.CopyFrom(existing)
    label, value = depended_by_label(independent.metadata.namespace, independent.metadata.name)
    merged.metadata.labels[label] = value
    merged.spec.resource.CopyFrom(_resource_of(dependent))
    snapshot = _snapshot(independent)
    for current in merged.spec.required_by:
        if (current.namespace, current.name) == (snapshot.namespace, snapshot.name):
            del current.clusters[:]
            current.clusters.extend(snapshot.clusters)
            break
    else:
        merged.spec.required_by.append(snapshot)
    return merged


def detach(existing: work_pb2.ResourceBinding, namespace: str, name: str) -> work_pb2.ResourceBinding:
    """`existing` no longer required by binding `namespace/name`
    (Karmada's removeScheduleResultFromAttachedBindings)."""
    detached = work_pb2.ResourceBinding()
    detached.CopyFrom(existing)
    detached.metadata.labels.pop(depended_by_label(namespace, name)[0], None)
    kept = [s for s in detached.spec.required_by if (s.namespace, s.name) != (namespace, name)]
    del detached.spec.required_by[:]
    detached.spec.required_by.extend(kept)
    return detached
