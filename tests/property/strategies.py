"""Hypothesis strategies for Karmada documents: valid ones, and valid ones broken at random.

Importing this module registers the hypothesis profiles: "default" keeps the property tests
to a few seconds of `make test`; `HYPOTHESIS_PROFILE=long` (`make fuzz`) runs many more examples.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from flotilla.api import codec
from flotilla.plane.benchmarks.hostile_documents import pure_admission, request_for
from tests.admission_cases import DIVIDED, VALID_BASES

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=5_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parents[2]

# Kinds the admission cases and examples do not carry.
_EXTRA_SEEDS = """\
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata:
  name: nginx-deployment
  namespace: default
spec:
  resource:
    apiVersion: apps/v1
    kind: Deployment
    namespace: default
    name: nginx
  replicas: 3
  clusters:
    - name: member1
      replicas: 1
    - name: member2
      replicas: 2
  schedulerName: default-scheduler
  conflictResolution: Abort
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
  annotations:
    example.com/owner: team-a
data:
  mode: fast
"""


def _override_policy() -> dict[str, Any]:
    """An OverridePolicy (a template to Flotilla, which does not override) for the divided policy's Deployment."""
    (policy,) = codec.load_yaml_documents(DIVIDED)
    rule = {
        "targetCluster": {"clusterNames": ["member1"]},
        "overriders": {"imageOverrider": [{"component": "Registry", "operator": "replace", "value": "example.com"}]},
    }
    return {
        "apiVersion": policy["apiVersion"],
        "kind": "OverridePolicy",
        "metadata": {**policy["metadata"], "name": "nginx-override"},
        "spec": {"resourceSelectors": policy["spec"]["resourceSelectors"], "overrideRules": [rule]},
    }


def _seed_documents() -> list[dict[str, Any]]:
    texts = [text for _, text in VALID_BASES] + [_EXTRA_SEEDS]
    texts += [path.read_text() for path in sorted((ROOT / "examples").glob("*.yaml"))]
    return [doc for text in texts for doc in codec.load_yaml_documents(text)] + [_override_policy()]


SEEDS: list[dict[str, Any]] = _seed_documents()
SEED_TEXTS: list[str] = [text for _, text in VALID_BASES]

_DNS_LABEL = st.from_regex(r"\A[a-z]([a-z0-9-]{0,14}[a-z0-9])?\Z")
_LABEL_KEY = st.from_regex(r"\A[a-z]{1,10}(\.example\.com/[a-z]{1,8})?\Z")
_LABEL_VALUE = st.from_regex(r"\A([a-z0-9]([a-z0-9._-]{0,10}[a-z0-9])?)?\Z")


@st.composite
def valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A seed with what any valid object may vary: its name and its labels."""
    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    meta = doc.setdefault("metadata", {})
    if doc.get("kind") not in ("Cluster", "CustomResourceDefinition"):
        # A Cluster's name makes its es-namespace and a CRD's is fixed by its spec.
        meta["name"] = draw(_DNS_LABEL)
    labels = draw(st.dictionaries(_LABEL_KEY, _LABEL_VALUE, max_size=3))
    if labels:
        meta.setdefault("labels", {}).update(labels)
    return doc


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included
    st.text(max_size=12),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
_HUGE = st.sampled_from([2**31, 2**32, 2**63, 2**64 + 1, 10**30, -(2**31) - 1, -(2**63) - 1, -(10**30)])
_WRONG_ENUMS = st.sampled_from(["", "Invalid", "duplicated", "DIVIDED", "In ", "exists", "NoExecute ", "Always"])
_UNICODE = st.one_of(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=12),
    st.sampled_from(["\u00e9t\u00e9", "\u202eevil", "\x00", "\ud800", "\U0001f680", "a" * 300]),
)

_MUTATIONS = (
    "drop", "duplicate", "retype", "enum", "negative", "huge", "unicode", "null", "list-for-map", "map-for-list",
    "unknown-field",
)


def _locations(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) in the document, the root's children first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in list(items):
        out.append((value, key))
        _locations(child, out)
    return out


def _mutate_once(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    locations = _locations(doc, [])
    parent, key = draw(st.sampled_from(locations))
    current = parent[key]
    kind = draw(st.sampled_from(_MUTATIONS))
    if kind == "drop":
        del parent[key]
    elif kind == "duplicate":
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(current))
        else:
            parent[key] = [current, copy.deepcopy(current)]
    elif kind == "retype":
        parent[key] = draw(_JSON)
    elif kind == "enum":
        parent[key] = draw(_WRONG_ENUMS)
    elif kind == "negative":
        parent[key] = -abs(current) - 1 if isinstance(current, int) else draw(st.integers(max_value=-1))
    elif kind == "huge":
        parent[key] = draw(_HUGE)
    elif kind == "unicode":
        parent[key] = draw(_UNICODE)
    elif kind == "null":
        parent[key] = None
    elif kind == "list-for-map":
        parent[key] = [current]
    elif kind == "map-for-list":
        parent[key] = {"item": current}
    else:
        target = current if isinstance(current, dict) else parent if isinstance(parent, dict) else doc
        # YAML, unlike JSON, has keys that are not strings.
        keys = st.sampled_from(["unknown", "Spec", "replicas ", "x-extra", "\u00fcber", 1, True, None, 2.5])
        target[draw(keys)] = draw(_JSON)


def mutate(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of doc broken one to three times."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        _mutate_once(draw, doc)
    return doc


# Tries at breaking a document so that a property still holds of it. About one mutated document
# in five is still admitted, but hypothesis draws the simplest breakages (the first field dropped)
# far more often than that; sixteen tries found one for about two examples in three.
KEPT_TRIES = 16


def mutate_kept(draw: st.DrawFn, doc: dict[str, Any], kept: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """A copy of doc broken so that `kept` still holds of it; doc unbroken (of which `kept` must
    hold) when no try did. For a test whose deepest checks need, say, an accepted document: left to
    chance, four examples in five would skip them."""
    for _ in range(KEPT_TRIES):
        broken = mutate(draw, doc)
        if kept(broken):
            return broken
    return copy.deepcopy(doc)


@st.composite
def mutations_of(draw: st.DrawFn, doc: dict[str, Any],
                 kept: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """doc broken (`mutate`); with `kept`, broken so that it holds (`mutate_kept`)."""
    return mutate(draw, doc) if kept is None else mutate_kept(draw, doc, kept)


@st.composite
def mutated_documents(draw: st.DrawFn, kept: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """A valid document broken: most are rejected, some still valid. With `kept`, broken so that
    it holds (`mutate_kept`)."""
    return draw(mutations_of(draw(valid_documents()), kept))


def admitted(doc: Any) -> bool:
    """Whether admission accepts doc as a new object."""
    return pure_admission(request_for(doc)).allowed
