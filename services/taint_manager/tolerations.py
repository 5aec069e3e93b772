"""Whether, and when, a binding must leave a cluster with NoExecute taints (docs/karmada-rules.md §7).

A pure function of the cluster's taints, the binding's tolerations and the time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flotilla.api.taints import EFFECT_NO_EXECUTE, toleration_tolerates_taint
from flotilla.api.v1 import meta_pb2

NOW = "now"
LATER = "later"
NEVER = "never"


@dataclass(frozen=True)
class Verdict:
    when: str  # now | later | never
    at: datetime | None = None  # for "later"
    untolerated: tuple[str, ...] = ()  # taint keys nothing tolerates

    @property
    def due(self) -> bool:
        return self.when == NOW


def assess(
    taints: Sequence[meta_pb2.Taint], tolerations: Sequence[meta_pb2.Toleration], now: datetime
) -> Verdict:
    no_execute = [t for t in taints if t.effect == EFFECT_NO_EXECUTE]
    if not no_execute:
        return Verdict(NEVER)
    untolerated = []
    triggers: list[datetime] = []
    for taint in no_execute:
        # Kubernetes records the first toleration that matches a taint as the one in use.
        used = next((tol for tol in tolerations if toleration_tolerates_taint(tol, taint)), None)
        if used is None:
            untolerated.append(taint.key)
            continue
        # As Karmada: only a taint with timeAdded starts a toleration's clock (admission stamps them all).
        if used.HasField("toleration_seconds") and taint.HasField("time_added"):
            added = taint.time_added.ToDatetime(tzinfo=UTC)
            triggers.append(added + timedelta(seconds=max(used.toleration_seconds, 0)))
    if untolerated:
        return Verdict(NOW, untolerated=tuple(untolerated))
    if not triggers:
        return Verdict(NEVER)
    earliest = min(triggers)
    if earliest <= now:
        return Verdict(NOW)
    return Verdict(LATER, at=earliest)
