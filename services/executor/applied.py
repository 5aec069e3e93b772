"""The generation each member object had when this executor last applied it.

A member's watch cache can lag behind an apply: until the apply's own event arrives it holds the
object as it was before, whose status (observedGeneration equal to the old generation) reads as
healthy for the previous spec. A failover that scaled the survivor up would then see it Healthy
at its old replica count and drop the eviction task too early. Status is therefore taken from a
cached object only once it is at least as new as the last apply.

The same lag hides an object an apply has just created: the cache does not hold it yet. Read as
missing, that marked the Work not applied, and the execution controller applied it again (two
writes of the Work, two of its binding, and a FullyApplied that flipped off and on). So an apply
is remembered as not yet reported until the member's watch reports that object (or its
deletion); until then, and for a bounded while, an absent object is one still to arrive.

Kept in memory: after a restart, watches begin with a fresh list, which already follows every
earlier apply.
"""

from __future__ import annotations

from typing import Any

MemberKey = tuple[str, str, str, str, str]  # cluster, apiVersion, kind, namespace, name


def member_key(cluster: str, manifest: dict[str, Any]) -> MemberKey:
    meta = manifest.get("metadata") or {}
    return (cluster, manifest["apiVersion"], manifest["kind"], meta.get("namespace", ""), meta.get("name", ""))


def _generation(obj: dict[str, Any]) -> int | None:
    generation = (obj.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else None


class AppliedGenerations:
    def __init__(self) -> None:
        self._generations: dict[MemberKey, int] = {}
        # Applies the member's watch has not reported yet: key -> when (a monotonic clock).
        self._unreported: dict[MemberKey, float] = {}

    def record(self, key: MemberKey, applied: dict[str, Any], at: float) -> None:
        """`applied`: the object the member answered the apply with, at `at`."""
        generation = _generation(applied)
        if generation is not None:
            self._generations[key] = generation
        self._unreported[key] = at

    def reported(self, key: MemberKey) -> None:
        """The member's watch has delivered an event of the object since its last apply."""
        self._unreported.pop(key, None)

    def unreported_for(self, key: MemberKey, now: float) -> float | None:
        """Seconds since an apply of the object that its member's watch has not reported yet."""
        at = self._unreported.get(key)
        return None if at is None else max(0.0, now - at)

    def forget(self, key: MemberKey) -> None:
        self._generations.pop(key, None)
        self._unreported.pop(key, None)

    def behind(self, key: MemberKey, observed: dict[str, Any]) -> bool:
        """Whether `observed` predates the last apply (kinds without a generation never are)."""
        wanted, seen = self._generations.get(key), _generation(observed)
        return wanted is not None and seen is not None and seen < wanted
