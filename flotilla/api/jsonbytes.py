"""JSON to and from bytes where a failover spends it: member requests and watches, Work
manifests and statuses, the simulator's history.

orjson encodes and decodes several times faster than the standard library, and at scale JSON
is a large share of the executor's and the simulator's work; it gives the same bytes (compact,
UTF-8, keys in insertion order), but for a float written with an exponent (`1e-7`, not `1e-07`).
What orjson does not take is left to the standard library, so nothing the standard library
accepts is refused: keys that are not strings and integers beyond 64 bits when encoding, and when
decoding the NaN and Infinity literals Python's `json` reads (its error, too, is the one raised).
Two things differ: a non-finite float is encoded as null, and an integer literal beyond 64
bits is decoded as a float, as Kubernetes' own decoder of unstructured objects does.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    try:
        # Copied out: orjson hands back its whole working buffer (4 KiB for a 600-byte document),
        # and what the simulator's history and the member caches keep, they keep by the thousand.
        return bytes(memoryview(orjson.dumps(value)))
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_sorted(value: Any) -> bytes:
    """Keys sorted, for comparing two values: equal values, equal bytes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True).encode()


def loads(data: bytes | bytearray | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
