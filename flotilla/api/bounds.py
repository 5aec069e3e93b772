"""How large a number of seconds the plane takes: the bound admission enforces on every
`...Seconds` field, and the clamp the controllers apply to values stored before it (or written
around admission), so that no date computed from one overflows.

A billion seconds is about 31.7 years: longer than any sensible toleration, grace period or
delay ("forever" is spelled by leaving the field out), and far from where a date overflows
(year 9999, about 2.5e11 seconds from now).
"""

from __future__ import annotations

MAX_SECONDS = 1_000_000_000


def clamp_seconds(value: int) -> int:
    """`value` within [-MAX_SECONDS, MAX_SECONDS]."""
    return max(-MAX_SECONDS, min(MAX_SECONDS, value))
