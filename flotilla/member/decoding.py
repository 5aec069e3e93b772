"""A member's answers read and decoded within `flotilla.member.limits.Limits`, for the member client
(`flotilla.member.client`) and the status service's reader (`flotilla.clusterstatus.member_http`).

Whatever the member sends, these raise `MemberError` and nothing else: a body or a watch line
past its cap (`MemberLimitExceeded`), what is not JSON or not shaped as Kubernetes answers are
(a list without items, an object whose metadata is no map, a watch event of an unknown type).
Callers then treat the member as they treat an unreachable one: a read that failed says nothing
of the member's objects, and in particular never that they are gone.

Each member's text that goes into an error (a Status' message) is cut to
`flotilla.api.limits.MAX_MESSAGE_BYTES`: errors are logged, and copied into conditions, Events
and spans.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from flotilla.api import jsonbytes
from flotilla.api.limits import truncate_message
from flotilla.member.errors import MemberError, MemberLimitExceeded
from flotilla.member.limits import Limits

__all__ = ["WATCH_EVENT_TYPES", "Budget", "MemberWatchEvent", "WatchDecoder", "decode_list", "decode_object",
           "read_body", "status_error"]

# client-go's watch decoder refuses any other type ("got invalid watch event type").
WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
# How much of an undecodable answer an error quotes.
_QUOTED = 200
# A Status (an error's body) has a handful of fields and a few causes: one that may hold more is
# not decoded, and the error quotes its start instead.
_STATUS_VALUES = 4096


@dataclass(frozen=True)
class MemberWatchEvent:
    """One event of a member's watch, as the member sent it: ADDED, MODIFIED, DELETED or BOOKMARK
    (whose object carries only the resourceVersion the watch is up to).

    Not `flotilla.api.events.WatchEvent`, the typed event an informer delivers: this one is a raw
    line of a Kubernetes watch stream (its type a string that may be BOOKMARK, its object an
    undecoded dict, no previous version), which member watches fold into their caches."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion", ""))


@dataclass(frozen=True)
class Budget:
    """What one answer may take: `bytes` of JSON decoding to at most `values` values, each named
    as its `Limits` field is, for the error."""

    bytes: int
    bytes_field: str
    values: int
    values_field: str

    @staticmethod
    def object(limits: Limits) -> Budget:
        return Budget(limits.object_bytes, "object_bytes", limits.object_values, "object_values")

    @staticmethod
    def list(limits: Limits) -> Budget:
        return Budget(limits.list_bytes, "list_bytes", limits.list_values, "list_values")

    @staticmethod
    def watch_line(limits: Limits) -> Budget:
        return Budget(limits.watch_line_bytes, "watch_line_bytes", limits.object_values, "object_values")


async def read_body(response: aiohttp.ClientResponse, server: str, operation: str, limit: int,
                    field: str) -> bytearray:
    """The whole body of `response`, read a chunk at a time (aiohttp holds at most its read buffer
    besides), never more than `limit` bytes of it: past that, the connection is closed, which
    stops the server's sending, and MemberLimitExceeded is raised. Bytes as decompressed, so a
    small compressed body that inflates to gigabytes stops at the cap too. A bytearray, which
    grows in place, where joining chunks into bytes would hold the body twice."""
    declared = response.content_length
    if declared is not None and declared > limit and not response.headers.get("Content-Encoding"):
        response.close()
        raise _too_large(response, server, operation, limit, field)
    body = bytearray()
    async for chunk in response.content.iter_any():
        if len(body) + len(chunk) > limit:
            response.close()
            raise _too_large(response, server, operation, limit, field)
        body += chunk
    return body


def _too_large(response: aiohttp.ClientResponse, server: str, operation: str, limit: int,
               field: str) -> MemberLimitExceeded:
    return MemberLimitExceeded(
        server, operation, f"the answer to {response.method} {response.url.path} is larger than {limit} bytes "
        f"(Limits.{field}); not read further", limit)


def decode_object(raw: bytes | bytearray, server: str, operation: str, budget: Budget) -> dict[str, Any]:
    """`raw` decoded as a JSON object, within `budget`'s values (its bytes were capped as read)."""
    _check_values(raw, server, operation, budget.values, budget.values_field)
    try:
        answer = jsonbytes.loads(raw)
    except (ValueError, RecursionError) as e:  # RecursionError: the standard library's, nested too deep
        raise MemberError(server, operation, f"expected a JSON object, got {_quote(raw)}") from e
    if not isinstance(answer, dict):
        raise MemberError(server, operation, f"expected a JSON object, got {_quote(raw)}")
    return answer


def decode_list(raw: bytes | bytearray, server: str, operation: str, limits: Limits, api_version: str = "",
                kind: str = "") -> tuple[list[dict[str, Any]], str]:
    """A Kubernetes list's items and its resourceVersion. A list that is not one (no `items`, an
    item that is no object) is an error, never an empty list: callers compare a list with what they
    hold, and an empty one would read as every object gone. Items without apiVersion and kind (lists
    of built-in kinds leave them off, client-go fills them in) get `api_version` and `kind`."""
    listed = decode_object(raw, server, operation, Budget.list(limits))
    if "items" not in listed:
        raise MemberError(server, operation, f"expected a list, got an object without items: {_quote(raw)}")
    items = listed["items"]
    if items is None:  # an empty list, as Go writes a nil slice
        items = []
    if not isinstance(items, list):
        raise MemberError(server, operation, f"expected a list, got items of type {type(items).__name__}")
    if len(items) > limits.list_items:
        raise MemberLimitExceeded(server, operation, f"the list holds {len(items)} objects, more than "
                                  f"{limits.list_items} (Limits.list_items)", limits.list_items)
    for item in items:
        _check_object(item, server, operation, "a list item")
        if api_version:
            item.setdefault("apiVersion", api_version)
        if kind:
            item.setdefault("kind", kind)
    metadata = listed.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
    return items, version if isinstance(version, str) else ""


def _check_object(obj: Any, server: str, operation: str, what: str) -> None:
    """An object as the caches and the executor read it: a map, whose metadata, if any, is a map
    whose name, namespace and resourceVersion, if any, are strings."""
    if not isinstance(obj, dict):
        raise MemberError(server, operation, f"{what} is not an object but {type(obj).__name__}")
    metadata = obj.get("metadata")
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise MemberError(server, operation, f"{what}'s metadata is not an object but {type(metadata).__name__}")
    for field in ("name", "namespace", "resourceVersion"):
        value = metadata.get(field)
        if value is not None and not isinstance(value, str):
            raise MemberError(server, operation, f"{what}'s metadata.{field} is not a string but "
                              f"{type(value).__name__}")


def _check_values(raw: bytes | bytearray, server: str, operation: str, limit: int, field: str) -> None:
    # Each array element and object member follows its container's `[` or `{`, or a `,` (strings
    # may hold them too, so the count is an upper bound): it bounds what decoding builds. An
    # answer shorter than the limit cannot exceed it, and is not counted.
    if len(raw) <= limit:
        return
    bound = 1 + raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    if bound > limit:
        raise MemberLimitExceeded(server, operation, f"the answer may hold up to {bound} values, more than "
                                  f"{limit} (Limits.{field}); not decoded", limit)


def status_error(server: str, operation: str, status: int, reason: str, body: bytes | bytearray) -> MemberError:
    """The error of an answer with HTTP status `status`: the Kubernetes Status' message and reason
    when the body is one, else the start of the body, else the HTTP reason; cut to size either way."""
    message, kube_reason = reason, ""
    if body:
        try:
            _check_values(body, server, operation, _STATUS_VALUES, "")
            answer = jsonbytes.loads(body)
        except (ValueError, RecursionError, MemberError):
            answer = None
        if isinstance(answer, dict):
            found, kube_reason = answer.get("message"), _text(answer.get("reason"))
            message = _text(found) or message
        elif text := bytes(body[:_QUOTED]).decode(errors="replace").strip():
            message = text
    return MemberError(server, operation, f"HTTP {status}: {truncate_message(message)}", status=status,
                       reason=kube_reason)


def _status_of_watch_error(server: str, operation: str, obj: dict[str, Any]) -> MemberError:
    """A watch's ERROR event: its object is a Status, whose code is the HTTP status (410: the
    version is too old, and the caller relists)."""
    code = obj.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 else 500
    reason = _text(obj.get("reason"))
    message = _text(obj.get("message")) or reason
    return MemberError(server, operation, f"HTTP {status}: {message}", status=status, reason=reason)


def _text(value: Any) -> str:
    """A Status field as text: a string, cut to size; anything else is no message."""
    return truncate_message(value) if isinstance(value, str) else ""


def _quote(raw: bytes | bytearray) -> str:
    return repr(bytes(raw[:_QUOTED])) + ("…" if len(raw) > _QUOTED else "")


class WatchDecoder:
    """A Kubernetes watch stream (one JSON event a line), decoded as its chunks arrive, however the
    network split them. Linear in the stream: each byte is searched for a newline once and copied
    at most twice, where appending chunks to one buffer and splitting it again would copy a long
    line once per chunk. A line is never held past `Limits.watch_line_bytes`: a server that never
    sends a newline is cut off there (MemberLimitExceeded), not read until memory runs out."""

    def __init__(self, server: str, operation: str, limits: Limits, api_version: str = "", kind: str = "") -> None:
        self.server = server
        self.operation = operation
        self.api_version = api_version
        self.kind = kind
        self._budget = Budget.watch_line(limits)
        self._parts: list[bytes] = []  # the current line's pieces, its newline not seen yet
        self._pending = 0  # their length

    def feed(self, chunk: bytes) -> Iterator[MemberWatchEvent]:
        """The events whose lines end in `chunk`, in order; an ERROR event, an undecodable line or
        one too long is raised as MemberError once the events before it are out."""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._check_length(self._pending + end - start)
            if self._parts:
                self._parts.append(chunk[start:end])
                line = b"".join(self._parts)
                self._parts, self._pending = [], 0
            else:
                line = chunk[start:end]
            start = end + 1
            if line.strip():
                yield self._event(line)
        if start < len(chunk):
            self._check_length(self._pending + len(chunk) - start)
            self._parts.append(chunk[start:] if start else chunk)
            self._pending += len(chunk) - start

    def end(self) -> Iterator[MemberWatchEvent]:
        """At the end of the stream: the last line, if the server sent it without its newline."""
        line, self._parts, self._pending = b"".join(self._parts), [], 0
        if line.strip():
            yield self._event(line)

    def _check_length(self, length: int) -> None:
        if length > self._budget.bytes:
            raise MemberLimitExceeded(self.server, self.operation, f"a watch line is longer than "
                                      f"{self._budget.bytes} bytes (Limits.watch_line_bytes); not read further",
                                      self._budget.bytes)

    def _event(self, line: bytes) -> MemberWatchEvent:
        _check_values(line, self.server, self.operation, self._budget.values, self._budget.values_field)
        try:
            event = jsonbytes.loads(line)
        except (ValueError, RecursionError) as e:
            raise self._undecodable(line) from e
        if not isinstance(event, dict):
            raise self._undecodable(line)
        type_, obj = event.get("type"), event.get("object")
        if not isinstance(type_, str) or type_ not in WATCH_EVENT_TYPES or not isinstance(obj, dict):
            raise self._undecodable(line)
        if type_ == "ERROR":
            raise _status_of_watch_error(self.server, self.operation, obj)
        _check_object(obj, self.server, self.operation, f"a watch event's ({type_}) object")
        if self.api_version:
            obj.setdefault("apiVersion", self.api_version)
        if self.kind:
            obj.setdefault("kind", self.kind)
        return MemberWatchEvent(type_, obj)

    def _undecodable(self, line: bytes) -> MemberError:
        return MemberError(self.server, self.operation, f"undecodable watch event: {_quote(line)}")
