"""Percentiles as the benchmarks print them."""

from __future__ import annotations

import math


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(values: list[float], digits: int = 3) -> dict[str, float | None]:
    """p50/p99/max; None (JSON null) where there is nothing to summarise."""
    if not values:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(percentile(values, 50), digits), "p99": round(percentile(values, 99), digits),
            "max": round(max(values), digits)}
