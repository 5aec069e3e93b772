"""Webster / Sainte-Laguë apportionment with Karmada's tie-break (docs/karmada-rules.md §8.5).

Shared by replica division in the scheduler and Job completions split by the
executor, so both divide exactly as Karmada does.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from flotilla.api.keys import fnv32a

Targets = list[tuple[str, int]]


def names_descending(uid: str) -> bool:
    """Karmada's Webster tie-break direction: names descending when FNV-32a of the
    resource template's UID is odd, ascending otherwise (and for an empty UID).

    Spreading the tie-break by UID keeps a fleet of equal workloads from all
    giving their odd replica to the same cluster.
    """
    return bool(uid) and fnv32a(uid.encode()) % 2 == 1


def webster(seats: int, votes: Mapping[str, int], initial: Mapping[str, int] | None = None, uid: str = "") -> Targets:
    """Webster / Sainte-Laguë apportionment (Karmada's `AllocateWebsterSeats`).

    Each of `seats` goes to the party with the largest votes / (2·seats + 1); ties go to
    the party with fewer seats, then by name (see `names_descending`). Parties in
    `initial` start with those seats (0 votes unless they also have votes). Every party
    is returned, with 0 seats too, sorted by name.
    """
    initial = initial or {}
    parties = {name: (0, seats_) for name, seats_ in initial.items()}
    for name, vote in votes.items():
        parties[name] = (vote, parties.get(name, (0, 0))[1])
    if not parties:
        return []
    names = sorted(parties)
    descending = names_descending(uid)
    rank = {name: (-i if descending else i) for i, name in enumerate(names)}
    # Go compares float64(votes) / float64(2*seats+1); Python floats are the same doubles,
    # so equal priorities tie exactly where they tie in Karmada.
    heap = [(-vote / (2 * held + 1), held, rank[name], name, vote) for name, (vote, held) in parties.items()]
    heapq.heapify(heap)
    for _ in range(max(seats, 0)):
        _, held, order, name, vote = heapq.heappop(heap)
        held += 1
        heapq.heappush(heap, (-vote / (2 * held + 1), held, order, name, vote))
    result = {name: held for _, held, _, name, _ in heap}
    return [(name, result[name]) for name in names]
