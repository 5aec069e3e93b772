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
    spec = cluster.spec
    if not spec.api_endpoint:
        raise ValueError(f"cluster {cluster.metadata.name} has no spec.apiEndpoint")
    ref = spec.secret_ref
    if not ref.name:
        raise ValueError(f"cluster {cluster.metadata.name} has no spec.secretRef")
    try:
        secret = await store.get(SECRET_TYPE, ref.namespace or CLUSTER_SECRET_NAMESPACE, ref.name)
    except NotFound as e:
        raise ValueError(f"secret {ref.namespace}/{ref.name} of cluster {cluster.metadata.name} not found") from e
    data = json.loads(secret.content or b"{}").get("data") or {}
    return Credentials(
        server=spec.api_endpoint,
        token=base64.b64decode(data.get("token", "")).decode(),
        ca_data=data.get("caBundle", ""),
        insecure_skip_tls_verify=spec.insecure_skip_tls_verification,
    )
