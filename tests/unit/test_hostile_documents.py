"""Hostile documents (docs/cli.md, "Limits") cost bounded time and memory and get one line each,
whether flotillactl reads them from a file or the webhook receives them.

The bounds are generous on purpose: they are not a benchmark but a guard against blowups
(an alias bomb expanded, recursion through ten thousand levels), which cost minutes or gigabytes.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from flotilla.api import codec
from flotilla.api.errors import UserError
from flotilla.api.limits import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_SELECTORS, shape_problem
from flotilla.cli.documents import read_sources
from flotilla.plane.benchmarks.hostile_documents import HOSTILE, Hostile, pure_admission, raw_request, request_for
from services.webhook.servicer import parse_request

T = TypeVar("T")
# CPU seconds with tracemalloc on, which slows allocation-heavy code several-fold. The slowest
# case takes a few seconds alone and more in a full run on a loaded machine (CPU time too grows
# when other processes share the cores' caches); the blowups guarded against cost minutes.
SECONDS = 15.0
BYTES = 100 * 2**20


def bounded(run: Callable[[], T]) -> T:
    """run(), asserting it took under SECONDS and allocated under BYTES at its peak."""
    tracemalloc.start()
    started = time.thread_time()  # CPU time: two other test runs may share the machine's cores
    try:
        result = run()
        seconds = time.thread_time() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    assert peak < BYTES, f"allocated {peak / 2**20:.0f} MiB"
    return result


def _read_and_admit(path: Path) -> list[str]:
    """What flotillactl apply reports: its own line for an unreadable file, else admission's violations."""
    try:
        sources = read_sources([str(path)])
    except UserError as e:
        return [str(e)]
    return [str(error) for _, doc in sources for error in pure_admission(request_for(doc)).errors]


@pytest.mark.parametrize("case", HOSTILE, ids=lambda case: case.name)
def test_a_hostile_file_is_one_line(case: Hostile, tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_bytes(case.text())
    (line,) = bounded(lambda: _read_and_admit(path))
    assert case.reason in line
    assert "\n" not in line
    if case.refused_when_read:
        assert line.startswith(f"{path}: ")
    else:
        assert line.startswith(f"{case.path}: ")


WEBHOOK_CASES = [case for case in HOSTILE if case.body is not None or not case.refused_when_read]


@pytest.mark.parametrize("case", WEBHOOK_CASES, ids=lambda case: case.name)
def test_a_hostile_request_is_one_violation(case: Hostile) -> None:
    body = case.request_body()
    assert body is not None
    raw = raw_request(body)
    review = bounded(lambda: pure_admission(parse_request(raw)))
    assert review.obj is None or not review.allowed
    (error,) = review.errors
    assert error.path.startswith(case.path) and bool(error.path) == bool(case.path)
    assert case.reason in error.reason


def test_nesting_past_the_limit_names_where() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: " + "[" * 120 + "]" * 120 + "\n"
    with pytest.raises(codec.CodecError) as caught:
        codec.load_yaml_documents(text)
    (error,) = caught.value.errors
    assert error.path.startswith("data.a[0][0][0]") and error.path.endswith("…")
    assert error.reason == f"nested deeper than {MAX_DEPTH} levels"


def test_a_document_at_the_depth_limit_is_accepted() -> None:
    # data is level 2 of the document, so its list may nest MAX_DEPTH - 2 more levels.
    depth = MAX_DEPTH - 2
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "x"}}
    nested: object = "leaf"
    for _ in range(depth):
        nested = [nested]
    doc["data"] = {"a": nested}
    assert pure_admission(request_for(doc)).allowed


def test_a_key_with_a_newline_is_quoted_in_the_path() -> None:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a\nb": "c"}}}
    (error,) = pure_admission(request_for(doc)).errors
    assert error.path == 'metadata.labels["a\\nb"]'


def _policy(selectors: int, terms: int) -> dict[str, object]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "wide", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"c{i}"} for i in range(selectors)],
            "placement": {"clusterAffinities": [
                {"affinityName": f"t{i}", "clusterNames": [f"member{i}"]} for i in range(terms)]},
        },
    }


@pytest.mark.parametrize(("selectors", "terms", "errors"), [
    (MAX_SELECTORS, MAX_SELECTORS, []),
    (MAX_SELECTORS + 1, 1, ["spec.resourceSelectors"]),
    (1, MAX_SELECTORS + 1, ["spec.placement.clusterAffinities"]),
])
def test_selectors_and_affinity_terms_are_limited(selectors: int, terms: int, errors: list[str]) -> None:
    reason = f"Too many: {MAX_SELECTORS + 1}: must have at most {MAX_SELECTORS} items"
    found = pure_admission(request_for(_policy(selectors, terms))).errors
    assert [str(e) for e in found] == [f"{path}: {reason}" for path in errors]


def test_size_counts_utf8_bytes_not_characters() -> None:
    # 800,000 characters, 1,600,000 bytes: what the request would carry.
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "é" * 800_000}}
    assert shape_problem(doc) == ("", f"the document is larger than {MAX_DOCUMENT_BYTES} bytes")
