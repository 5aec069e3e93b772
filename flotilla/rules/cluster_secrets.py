"""Where a joined cluster's credentials live: a Secret `karmada-cluster/<name>`
(keys `token` and `caBundle`, as Karmada keeps them) named by the Cluster's
`spec.secretRef`, with the server in `spec.apiEndpoint`."""

from __future__ import annotations

import base64
import json
from typing import Any

from flotilla.api import registry
from flotilla.api.v1 import cluster_pb2
from flotilla.api.wellknown import CLUSTER_SECRET_NAMESPACE
from flotilla.member import Credentials
from flotilla.store import NotFound, ObjectStore
from flotilla.store.informer import Informer

SECRET_TYPE = registry.for_kind("v1", "Secret")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret_document(name: str, credentials: Credentials) -> dict[str, Any]:
    data = {"token": _b64(credentials.token)}
    if credentials.ca_data:
        # kubeconfig's certificate-authority-data is already base64 PEM; the Secret holds the PEM.
        data["caBundle"] = credentials.ca_data
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": CLUSTER_SECRET_NAMESPACE},
        "type": "Opaque",
        "data": data,
    }


async def load_credentials(store: ObjectStore, cluster: cluster_pb2.Cluster) -> Credentials:
    """The credentials a Cluster points at; a clear error when they are missing."""
    namespace, name = _secret_ref(cluster)
    return _credentials(cluster, await _read_secret(store, cluster, namespace, name))


class CachedCredentials:
    """`load_credentials` from an informer of the cluster-secret namespace: a prober asks at every
    probe, and Secrets change rarely. A Secret the informer has not seen (not synced yet, just
    created, or in another namespace) is read from the store; a rotated token or CA is seen as
    soon as the informer has the new Secret."""

    def __init__(self, store: ObjectStore, secrets: Informer[Any]) -> None:
        self.store = store
        self.secrets = secrets

    async def load(self, cluster: cluster_pb2.Cluster) -> Credentials:
        namespace, name = _secret_ref(cluster)
        secret = self.secrets.get(f"{namespace}/{name}") if namespace == self.secrets.namespace else None
        if secret is None:
            secret = await _read_secret(self.store, cluster, namespace, name)
        return _credentials(cluster, secret)


def _secret_ref(cluster: cluster_pb2.Cluster) -> tuple[str, str]:
    spec = cluster.spec
    if not spec.api_endpoint:
        raise ValueError(f"cluster {cluster.metadata.name} has no spec.apiEndpoint")
    ref = spec.secret_ref
    if not ref.name:
        raise ValueError(f"cluster {cluster.metadata.name} has no spec.secretRef")
    return ref.namespace or CLUSTER_SECRET_NAMESPACE, ref.name


async def _read_secret(store: ObjectStore, cluster: cluster_pb2.Cluster, namespace: str, name: str) -> Any:
    try:
        return await store.get(SECRET_TYPE, namespace, name)
    except NotFound as e:
        raise ValueError(f"secret {namespace}/{name} of cluster {cluster.metadata.name} not found") from e


def _credentials(cluster: cluster_pb2.Cluster, secret: Any) -> Credentials:
    spec = cluster.spec
    data = json.loads(secret.content or b"{}").get("data") or {}
    return Credentials(
        server=spec.api_endpoint,
        token=base64.b64decode(data.get("token", "")).decode(),
        ca_data=data.get("caBundle", ""),
        insecure_skip_tls_verify=spec.insecure_skip_tls_verification,
        proxy_url=spec.proxy_url,
        proxy_header=tuple(sorted(spec.proxy_header.items())),
    )
