"""When this process added each taint, to the microsecond, for the failover trace.

A taint's timeAdded keeps whole seconds (metav1.Time on the wire), up to a second before the taint
was written. A taint span started there began before the detection that caused it (a detection
ending at :03.8 was followed by a taint shown at :03.0), though the status service stamps its
spans from the same wall clock to the microsecond. The taint manager keeps the moment it wrote
each taint and gives its spans that; a taint it did not add (written before this process led)
falls back to its timeAdded.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from flotilla.api.v1 import meta_pb2
from flotilla.runtime.tracecontext import span_ns


class TaintTimes:
    def __init__(self) -> None:
        # cluster -> (key, effect) -> (the taint's timeAdded seconds, when it was written in ns). The
        # seconds tell one taint from the same taint removed and added again.
        self._added: dict[str, dict[tuple[str, str], tuple[int, int]]] = {}

    def record(self, cluster: str, taint: meta_pb2.Taint, at: datetime) -> None:
        self._added.setdefault(cluster, {})[(taint.key, taint.effect)] = (taint.time_added.seconds, span_ns(at))

    def added_ns(self, cluster: str, taint: meta_pb2.Taint) -> int:
        """When the taint was added: as this process wrote it, else its timeAdded."""
        known = self._added.get(cluster, {}).get((taint.key, taint.effect))
        if known is not None and known[0] == taint.time_added.seconds:
            return known[1]
        return taint.time_added.ToNanoseconds()

    def keep_only(self, cluster: str, taints: Iterable[meta_pb2.Taint]) -> None:
        """Forget the cluster's taints that are gone."""
        mine = self._added.get(cluster)
        if not mine:
            return
        present = {(t.key, t.effect) for t in taints}
        for gone in [k for k in mine if k not in present]:
            del mine[gone]
        if not mine:
            del self._added[cluster]
