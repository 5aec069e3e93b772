"""Small builders of API objects shared by tests."""

from __future__ import annotations

from pathlib import Path

from flotilla.api.v1 import cluster_pb2

ROOT = Path(__file__).resolve().parents[1]
# The Karmada YAML examples of this repository (examples/README.md lists them).
EXAMPLES_DIR = ROOT / "examples"
EXAMPLE_FILES = sorted(EXAMPLES_DIR.glob("*.yaml"))


def make_cluster(name: str, **labels: str) -> cluster_pb2.Cluster:
    c = cluster_pb2.Cluster(api_version="cluster.karmada.io/v1alpha1", kind="Cluster")
    c.metadata.name = name
    c.metadata.labels.update(labels)
    c.spec.api_endpoint = f"https://{name}.example:6443"
    return c
