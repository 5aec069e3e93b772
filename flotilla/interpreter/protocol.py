"""The frames between the script pool and its workers: a 4-byte big-endian length, then that many bytes of JSON.

JSON, not pickle: a worker runs scripts nobody vetted, so whatever it sends
back is read as data only. Unpickling would run code named by the sender,
and one sandbox escape in a worker would become code in the executor.

The exchange (flotilla.interpreter.pool drives it, flotilla.interpreter.worker answers):
- the worker, once its sandbox is up: `{"ready": <pid>}`;
- the pool, one call at a time: `{"id", "script", "function", "arguments", "timeout", "cpu"}`;
- the worker: `{"id", "values": [[<Lua type>, <JSON value>], ...]}`, or
  `{"id", "failure": "error" | "timeout" | "memory", "error": <message>}`.
The pool closing the worker's stdin is the order to exit.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
# Far above any object a health script reads (an etcd value is at most 1.5 MiB), far below
# what would strain the worker's address-space limit once decoded.
MAX_FRAME = 16 * 2**20

READY, ID, VALUES, FAILURE, ERROR = "ready", "id", "values", "failure", "error"
FAILED, TIMED_OUT, OUT_OF_MEMORY = "error", "timeout", "memory"


class FrameTooLarge(ValueError):
    """A message longer than MAX_FRAME once encoded."""


class ProtocolError(ValueError):
    """A frame that is not what the other side may send."""


def encode(message: Any) -> bytes:
    """One frame. ASCII-only JSON, so no string (not even a lone surrogate) fails to encode."""
    body = json.dumps(message, separators=(",", ":")).encode("ascii")
    if len(body) > MAX_FRAME:
        raise FrameTooLarge(f"message of {len(body)} bytes is over the {MAX_FRAME}-byte limit")
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolError(f"frame is not JSON: {error}") from error


def body_length(header: bytes) -> int:
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME:
        raise ProtocolError(f"frame of {length} bytes is over the {MAX_FRAME}-byte limit")
    return int(length)


# -- the worker's side: blocking reads and writes on its stdin and stdout ------------------------


def read_frame(fd: int) -> Any | None:
    """The next message, or None at end of file (the pool is gone or wants the worker to exit)."""
    header = _read_exactly(fd, HEADER.size)
    if header is None:
        return None
    body = _read_exactly(fd, body_length(header))
    if body is None:
        raise ProtocolError("end of file inside a frame")
    return decode(body)


def write_frame(fd: int, frame: bytes) -> None:
    view = memoryview(frame)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            if remaining == size:
                return None
            raise ProtocolError("end of file inside a frame")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
