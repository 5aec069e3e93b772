"""Whose a member object is: the apply and delete decisions of the execution controller, as a
table of member objects against the Work's manifest and its conflict resolution."""

from __future__ import annotations

from typing import Any

import pytest

from services.executor import ownership
from services.executor.ownership import Apply, Delete

RB = "resourcebinding.karmada.io/permanent-id"
CRB = "clusterresourcebinding.karmada.io/permanent-id"
MANAGED = "karmada.io/managed"
RESOLUTION = "work.karmada.io/conflict-resolution"


def obj(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "nginx", "namespace": "default", **meta}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata}


def manifest(resolution: str | None = "abort", binding: tuple[str, str] | None = (RB, "b-1")) -> dict[str, Any]:
    labels = {"app": "nginx"}
    if binding is not None:
        labels[binding[0]] = binding[1]
    return obj(labels, {RESOLUTION: resolution} if resolution is not None else {})


FOREIGN = obj({"owner": "other-team"})

# (member object, Work manifest, apply decision, delete decision)
CASES = [
    pytest.param(None, manifest(), Apply.CREATE, Delete.ABSENT, id="absent"),
    pytest.param(obj({RB: "b-1", MANAGED: "true"}), manifest(), Apply.UPDATE, Delete.DELETE, id="this-binding"),
    # Applied by a Flotilla before the managed label was stamped: the binding label says whose.
    pytest.param(obj({RB: "b-1"}), manifest(), Apply.UPDATE, Delete.DELETE, id="this-binding-unstamped"),
    pytest.param(obj({CRB: "c-1"}), manifest(binding=(CRB, "c-1")), Apply.UPDATE, Delete.DELETE,
                 id="this-cluster-binding"),
    pytest.param(FOREIGN, manifest(), Apply.ABORT, Delete.LEAVE, id="foreign-abort"),
    pytest.param(FOREIGN, manifest(resolution=None), Apply.ABORT, Delete.LEAVE, id="foreign-no-annotation"),
    pytest.param(FOREIGN, manifest(resolution="Overwrite"), Apply.ABORT, Delete.LEAVE,
                 id="foreign-misspelt-overwrite"),
    pytest.param(FOREIGN, manifest(resolution="overwrite"), Apply.ADOPT, Delete.LEAVE, id="foreign-overwrite"),
    pytest.param(obj(), manifest(), Apply.ABORT, Delete.LEAVE, id="no-labels"),
    pytest.param(obj({"owner": None}), manifest(), Apply.ABORT, Delete.LEAVE, id="odd-labels"),
    # Another binding's object (of another plane, or an earlier binding of a deleted template
    # whose Work kept its objects): not this Work's.
    pytest.param(obj({RB: "b-2", MANAGED: "true"}), manifest(), Apply.ABORT, Delete.LEAVE, id="other-binding"),
    pytest.param(obj({RB: "b-2"}), manifest(resolution="overwrite"), Apply.ADOPT, Delete.LEAVE,
                 id="other-binding-overwrite"),
    pytest.param(obj({CRB: "b-1"}), manifest(), Apply.ABORT, Delete.LEAVE, id="same-id-other-kind-of-binding"),
    # Karmada's managed label alone is not this binding's mark.
    pytest.param(obj({MANAGED: "true"}), manifest(), Apply.ABORT, Delete.LEAVE, id="managed-label-only"),
    # A Work made by hand (no binding): Karmada's rule, the managed label.
    pytest.param(obj({MANAGED: "true"}), manifest(binding=None), Apply.UPDATE, Delete.DELETE,
                 id="hand-made-work-managed"),
    pytest.param(obj({MANAGED: "false"}), manifest(binding=None), Apply.ABORT, Delete.LEAVE,
                 id="hand-made-work-not-managed"),
    pytest.param(FOREIGN, manifest(binding=None, resolution="overwrite"), Apply.ADOPT, Delete.LEAVE,
                 id="hand-made-work-overwrite"),
]


@pytest.mark.parametrize(("observed", "desired", "apply", "delete"), CASES)
def test_decisions(observed: dict[str, Any] | None, desired: dict[str, Any], apply: Apply, delete: Delete) -> None:
    assert ownership.apply_decision(observed, desired) is apply
    assert ownership.delete_decision(observed, desired) is delete


def test_what_an_apply_stamps_makes_the_object_owned() -> None:
    for desired in (manifest(), manifest(binding=None), manifest(resolution="overwrite")):
        sent = ownership.stamped(desired, "karmada-es-member2", "nginx-687f7fb96f")
        assert sent["metadata"]["labels"][MANAGED] == "true"
        assert sent["metadata"]["annotations"]["work.karmada.io/namespace"] == "karmada-es-member2"
        assert sent["metadata"]["annotations"]["work.karmada.io/name"] == "nginx-687f7fb96f"
        assert desired["metadata"]["labels"].get(MANAGED) is None  # the manifest itself is untouched
        # Once applied, even an adopted object is Flotilla's from then on.
        assert ownership.apply_decision(sent, desired) is Apply.UPDATE
        assert ownership.delete_decision(sent, desired) is Delete.DELETE


def test_the_conflict_message_is_karmadas() -> None:
    assert ownership.conflict_message(manifest(), "member2") == (
        "resource(kind=Deployment, default/nginx) already exists in the cluster member2 and the "
        "work.karmada.io/conflict-resolution strategy value is abort, Flotilla will not manage this resource")
    assert "strategy value is empty" in ownership.conflict_message(manifest(resolution=None), "member2")


def test_preconditions_name_the_object_as_read() -> None:
    assert ownership.preconditions(obj(uid="u-1", resourceVersion="42")) == {"uid": "u-1", "resourceVersion": "42"}
    assert ownership.preconditions(obj(uid="u-1")) == {"uid": "u-1"}
