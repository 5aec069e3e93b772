"""flotilla.jsonbytes: the standard library's compact JSON, faster, refusing nothing it took."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flotilla import jsonbytes


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
    (b'{"a": NaN}', {"a": pytest.approx(float("nan"), nan_ok=True)}),  # read by the standard library, as before
])
def test_loads(data: bytes | str, value: Any) -> None:
    assert jsonbytes.loads(data) == value


def test_a_malformed_document_raises_the_standard_librarys_error() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        jsonbytes.loads(b'{"a":')
    assert type(raised.value) is json.JSONDecodeError
