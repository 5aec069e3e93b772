"""The member client's parsers under random input: a watch stream decodes to the same events
however the network splits it; whatever bytes a member sends, a watch line, a list or an error
body ends as events, items or a MemberError, never as another exception, never past its cap and
never by hanging; truncate_message always gives valid UTF-8 within its limit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flotilla.api import jsonbytes
from flotilla.api.limits import MAX_MESSAGE_BYTES, truncate_message
from flotilla.member.decoding import WATCH_EVENT_TYPES, MemberWatchEvent, WatchDecoder, decode_list, status_error
from flotilla.member.errors import MemberError, MemberLimitExceeded
from flotilla.member.limits import Limits
from tests.property import strategies as _profiles  # noqa: F401  # registers and loads the hypothesis profiles

SERVER, OPERATION = "https://member.example:6443", "watch Pod"
# Whatever the profile, one example must not take long: a parser that hangs fails here.
quick = settings(deadline=5000)

names = st.text(st.characters(codec="utf-8"), max_size=20)
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=30) | \
    st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=8), inner, max_size=4), max_leaves=20)


@st.composite
def watch_events(draw: st.DrawFn) -> dict[str, Any]:
    metadata = {"name": draw(names), "namespace": draw(names), "resourceVersion": str(draw(st.integers(0, 10**12)))}
    obj: dict[str, Any] = {"metadata": metadata, "spec": draw(json_values)}
    return {"type": draw(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"])), "object": obj}


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def decode(chunks: list[bytes], limits: Limits | None = None) -> list[MemberWatchEvent]:
    decoder = WatchDecoder(SERVER, OPERATION, limits or Limits(), "v1", "Pod")
    events: list[MemberWatchEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.end())
    return events


@quick
@given(st.lists(watch_events(), max_size=8), st.lists(st.integers(0, 10**6), max_size=30), st.booleans(),
       st.sampled_from([b"\n", b"\r\n", b"\n\n"]))
def test_events_split_anywhere_decode_to_the_same_events(events: list[dict[str, Any]], cuts: list[int],
                                                         last_newline: bool, newline: bytes) -> None:
    stream = newline.join(jsonbytes.dumps(e) for e in events)
    if events and last_newline:
        stream += newline
    decoded = decode(split(stream, cuts))
    expected = [MemberWatchEvent(e["type"], {"apiVersion": "v1", "kind": "Pod", **e["object"]}) for e in events]
    assert decoded == expected
    assert [e.resource_version for e in decoded] == [e["object"]["metadata"]["resourceVersion"] for e in events]


@quick
@given(st.binary(max_size=2000), st.lists(st.integers(0, 10**6), max_size=30))
def test_random_bytes_are_events_or_a_member_error(data: bytes, cuts: list[int]) -> None:
    try:
        events = decode(split(data, cuts))
    except MemberError:
        return
    assert all(e.type in WATCH_EVENT_TYPES - {"ERROR"} and isinstance(e.object, dict) for e in events)


@quick
@given(st.lists(json_values | watch_events() | st.fixed_dictionaries({"type": st.sampled_from(
    sorted(WATCH_EVENT_TYPES)), "object": json_values}), max_size=5), st.lists(st.integers(0, 10**6), max_size=10))
def test_json_that_is_no_event_is_a_member_error(values: list[Any], cuts: list[int]) -> None:
    stream = b"".join(jsonbytes.dumps(v) + b"\n" for v in values)
    try:
        events = decode(split(stream, cuts))
    except MemberError:
        return
    for event in events:
        assert event.type in WATCH_EVENT_TYPES - {"ERROR"}
        metadata = event.object.get("metadata")
        assert metadata is None or isinstance(metadata, dict)
        event.resource_version  # noqa: B018  # reading it must not raise either


@quick
@given(st.binary(min_size=1, max_size=3000), st.lists(st.integers(0, 10**6), max_size=40), st.integers(1, 200))
def test_no_line_is_held_past_its_cap(data: bytes, cuts: list[int], limit: int) -> None:
    decoder = WatchDecoder(SERVER, OPERATION, Limits(watch_line_bytes=limit))
    longest = max(len(line) for line in data.split(b"\n"))
    try:
        for chunk in split(data, cuts):
            for _ in decoder.feed(chunk):
                pass
            assert decoder._pending <= limit
        for _ in decoder.end():
            pass
    except MemberLimitExceeded as e:
        assert longest > limit and e.limit == limit
    except MemberError:
        pass
    else:
        assert longest <= limit


def test_a_long_stream_of_one_line_is_split_in_linear_time() -> None:
    # 8 MiB in 4 KiB chunks: joining a buffer at every chunk would copy 8 GiB.
    decoder = WatchDecoder(SERVER, OPERATION, Limits())
    chunk = b"a" * 4096
    for _ in range(2048):
        assert list(decoder.feed(chunk)) == []
    with pytest.raises(MemberError, match="undecodable watch event"):
        list(decoder.feed(b"\n"))


@quick
@given(st.binary(max_size=3000) | json_values.map(jsonbytes.dumps) | st.fixed_dictionaries(
    {"items": st.lists(json_values, max_size=5), "metadata": json_values}).map(jsonbytes.dumps))
def test_a_list_decodes_to_objects_or_a_member_error(raw: bytes) -> None:
    try:
        items, version = decode_list(raw, SERVER, "list Pod", Limits(list_items=3), "v1", "Pod")
    except MemberError:
        return
    assert isinstance(version, str) and len(items) <= 3
    for item in items:
        assert isinstance(item, dict) and item["apiVersion"] is not None and item["kind"] is not None
        metadata = item.get("metadata")
        assert metadata is None or isinstance(metadata, dict)


@quick
@given(st.binary(max_size=5000) | st.fixed_dictionaries({"message": json_values, "reason": json_values}).map(
    jsonbytes.dumps) | st.text(min_size=2000, max_size=5000).map(
    lambda m: jsonbytes.dumps({"kind": "Status", "message": m, "reason": "Invalid"})), st.integers(100, 599))
def test_an_error_body_becomes_a_short_member_error(body: bytes, code: int) -> None:
    error = status_error(SERVER, OPERATION, code, "Reason", body)
    assert error.status == code and isinstance(error.reason, str)
    assert len(str(error).encode()) <= len(f"{SERVER}: {OPERATION}: HTTP {code}: ") + MAX_MESSAGE_BYTES


@quick
@given(st.text(max_size=3000), st.integers(40, 2000))
def test_truncate_message_is_valid_utf8_within_its_limit(text: str, limit: int) -> None:
    cut = truncate_message(text, limit)
    encoded = cut.encode()  # valid UTF-8: a lone surrogate would raise
    assert len(encoded) <= limit and truncate_message(cut, limit) == cut
    whole = text.encode(errors="replace")
    if len(whole) <= limit:
        assert encoded == whole
    else:
        kept = cut[:cut.rindex("… [truncated")]
        assert whole.startswith(kept.encode()) and cut.endswith(f"[truncated from {len(whole)} bytes]")
