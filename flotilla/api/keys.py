"""Object keys, etcd keys and the names Karmada derives for bindings, Works and es-namespaces."""

from __future__ import annotations

from flotilla.api.wellknown import EXECUTION_NAMESPACE_PREFIX

ETCD_ROOT = "/flotilla"

# Karmada's rand.SafeEncodeString alphabet: no vowels, so no words, and no
# characters that confuse (0/o, 1/l, 3/e).
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def object_key(namespace: str | None, name: str) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object."""
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str, str]:
    """Inverse of object_key: `ns/name` -> ("ns", "name"), `name` -> ("", "name")."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", key
    if not namespace or not name or "/" in name:
        raise ValueError(f'invalid object key "{key}": expected "name" or "namespace/name"')
    return namespace, name


def etcd_key(resource: str, namespace: str | None, name: str) -> str:
    """`/flotilla/<resource>/<namespace>/<name>`; cluster-scoped objects omit the namespace."""
    if not name:
        raise ValueError("etcd_key: name is required")
    return f"{etcd_prefix(resource, namespace)}{name}"


def etcd_prefix(resource: str, namespace: str | None = None) -> str:
    """The prefix of every key of a resource, or of one namespace of it.

    It ends with "/", so that `works` never matches `workspaces` and
    namespace `a` never matches `ab`.
    """
    if not resource or "/" in resource:
        raise ValueError(f'invalid resource "{resource}"')
    if namespace:
        return f"{ETCD_ROOT}/{resource}/{namespace}/"
    return f"{ETCD_ROOT}/{resource}/"


def _dns_safe(name: str) -> str:
    # RBAC names like "system:controller:x" are valid for their kinds but not
    # as the DNS subdomain names CRD objects need.
    return name.replace(":", ".")


def binding_name(name: str, kind: str) -> str:
    """Karmada's ResourceBinding name for a template: lower(`<name>-<kind>`), ':' -> '.'."""
    return f"{_dns_safe(name)}-{kind}".lower()


def fnv32a(data: bytes) -> int:
    h = _FNV32_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """Karmada's rand.SafeEncodeString."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def work_name(namespace: str | None, name: str, kind: str) -> str:
    """Karmada's Work name for a template: `<name>-<SafeEncode(FNV-32a(ns-name-kind))>` (docs/karmada-rules.md §2.4).

    Deployment default/nginx -> `nginx-687f7fb96f`.
    """
    hashed = f"{namespace}-{name}-{kind}" if namespace else f"{name}-{kind}"
    suffix = safe_encode(str(fnv32a(hashed.lower().encode())))
    return f"{_dns_safe(name)}-{suffix}".lower()


def execution_namespace(cluster: str) -> str:
    """The namespace holding a member cluster's Works: `karmada-es-<cluster>`."""
    return EXECUTION_NAMESPACE_PREFIX + cluster


def cluster_of_execution_namespace(namespace: str) -> str | None:
    """The cluster an es-namespace belongs to, or None for any other namespace."""
    if namespace.startswith(EXECUTION_NAMESPACE_PREFIX) and len(namespace) > len(EXECUTION_NAMESPACE_PREFIX):
        return namespace[len(EXECUTION_NAMESPACE_PREFIX) :]
    return None
