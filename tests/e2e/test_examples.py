"""Every file in examples/ goes through the real admission path (the webhook service on a real
etcd, written with flotillactl) and is accepted, all of them together in one control plane."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flotilla.api import codec
from flotilla.store.embedded import EmbeddedEtcd
from tests.conftest import CtlResult
from tests.factories import EXAMPLE_FILES, EXAMPLES_DIR

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("webhook")]


def _defines_crds(path: Path) -> bool:
    return any(d["kind"] == "CustomResourceDefinition" for d in codec.load_yaml_documents(path.read_text()))


def in_apply_order(paths: list[Path]) -> list[Path]:
    """CRDs first, as `kubectl apply` needs them before their custom resources; then by name."""
    return sorted(paths, key=lambda p: (not _defines_crds(p), p.name))


def _names(path: Path) -> list[str]:
    return [f"{d['kind'].lower()}/{d['metadata']['name']}" for d in codec.load_yaml_documents(path.read_text())]


def test_every_example_is_a_karmada_yaml_file() -> None:
    on_disk = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.name != "README.md")
    assert on_disk == [p.name for p in EXAMPLE_FILES], "examples/ holds only .yaml files besides README.md"
    listed = (EXAMPLES_DIR / "README.md").read_text()
    assert [p.name for p in EXAMPLE_FILES if f"`{p.name}`" not in listed] == [], "examples/README.md lists each file"


def test_all_examples_apply_together_and_reapply_unchanged(
    clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]
) -> None:
    ordered = in_apply_order(EXAMPLE_FILES)
    assert _defines_crds(ordered[0]), "the FlinkDeployment example comes with its CRD"
    for path in ordered:
        result = ctl("apply", "-f", str(path))
        assert result.code == 0, f"{path.name} was rejected: {result.err}"
        assert result.out.splitlines() == [f"{name} created" for name in _names(path)], path.name
    for path in ordered:
        result = ctl("apply", "-f", str(path))
        assert result.code == 0, f"{path.name}: {result.err}"
        assert result.out.splitlines() == [f"{name} unchanged" for name in _names(path)], path.name
    # Everything reads back.
    for path in ordered:
        for doc in codec.load_yaml_documents(path.read_text()):
            args = ["get", doc["kind"], doc["metadata"]["name"], "-o", "name"]
            if doc["metadata"].get("namespace"):
                args += ["-n", doc["metadata"]["namespace"]]
            got = ctl(*args)
            assert got.code == 0, f"{path.name}: {doc['kind']}/{doc['metadata']['name']}: {got.err}"
