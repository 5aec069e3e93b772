"""Ages the way kubectl prints them (apimachinery's duration.HumanDuration)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from flotilla.api import codec

UNKNOWN = "<unknown>"


def human_duration(seconds: float) -> str:
    """`45s`, `3m12s`, `15m`, `2h30m`, `10h`, `3d4h`, `120d`, `2y30d`, `9y`.

    Precision shrinks as the duration grows, so a column of ages stays narrow.
    """
    whole = int(seconds)
    # Up to two seconds in the future is clock skew between machines: call it now.
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def since(ts: Timestamp | None, now: datetime) -> str:
    """How long ago a metav1.Time was; `<unknown>` when it was never set (all zero)."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return UNKNOWN
    return human_duration(_epoch(now) - (ts.seconds + ts.nanos / 1e9))


def since_text(text: object, now: datetime) -> str:
    """Like `since`, for a time as it appears in an object's JSON (`2026-01-02T03:04:05Z`)."""
    if not isinstance(text, str) or not text:
        return UNKNOWN
    try:
        ts = codec.parse_time(text)
    except codec.CodecError:
        return UNKNOWN
    return since(ts, now)


def _epoch(now: datetime) -> float:
    # A naive `now` is UTC, as the store's clock hands out.
    return (now if now.tzinfo else now.replace(tzinfo=UTC)).timestamp()
