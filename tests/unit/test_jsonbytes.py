"""flotilla.api.jsonbytes: the standard library's compact JSON, faster, refusing nothing it took."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from flotilla.api import jsonbytes


def standard(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("value", [
    {},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"b": "1", "a": "2"}},
     "spec": {"replicas": 3, "paused": False, "minReadySeconds": None, "ratio": 0.5}},
    {"text": "naïve — ünïcode \u2028 \"quoted\" \\ slash/ \n tab\t \x01"},
    [1, -2, 2**63 - 1, -(2**63), 1.5, 0.1, True, None, "s"],
    {1: "integer key"},  # orjson refuses it: the standard library's answer
    {"big": 2**70},  # beyond 64 bits: likewise
])
def test_dumps_gives_the_standard_librarys_bytes(value: Any) -> None:
    assert jsonbytes.dumps(value) == standard(value)


def test_a_float_with_an_exponent_is_written_shorter_and_reads_back_the_same() -> None:
    value = {"small": 1e-07, "large": 1e22}
    assert jsonbytes.dumps(value) == b'{"small":1e-7,"large":1e+22}'
    assert json.loads(jsonbytes.dumps(value)) == value


@pytest.mark.parametrize(("data", "value"), [
    (b'{"a":[1,2.5,"x",null,true]}', {"a": [1, 2.5, "x", None, True]}),
    ('{"a":"\u00e9"}', {"a": "é"}),
    (b'{"a": NaN}', {"a": pytest.approx(float("nan"), nan_ok=True)}),  # read by the standard library
])
def test_loads(data: bytes | str, value: Any) -> None:
    assert jsonbytes.loads(data) == value


def test_a_malformed_document_raises_the_standard_librarys_error() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonbytes.loads(b'{"a":')
    assert type(raised.value) is json.JSONDecodeError


@pytest.mark.parametrize(("a", "b", "equal"), [
    ({"b": 1, "a": {"d": [1, 2], "c": None}}, {"a": {"c": None, "d": [1, 2]}, "b": 1}, True),
    ({"a": [1, 2]}, {"a": [2, 1]}, False),
    ({1: "x", 2: "y"}, {2: "y", 1: "x"}, True),  # keys orjson refuses: sorted by the standard library
    (None, None, True),
])
def test_dumps_sorted_compares_values_whatever_their_key_order(a: Any, b: Any, equal: bool) -> None:
    assert (jsonbytes.dumps_sorted(a) == jsonbytes.dumps_sorted(b)) is equal


def test_what_dumps_returns_holds_no_more_memory_than_its_length() -> None:
    document = {"metadata": {"name": "web"}, "status": {"message": "x" * 300}}
    tracemalloc.start()
    try:
        kept = [jsonbytes.dumps(document) for _ in range(1000)]
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2 * sum(len(k) for k in kept) + 64 * 1024
