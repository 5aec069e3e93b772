"""How much of a member cluster's answer this process reads and decodes: the one place the caps are.

A member is reached at whatever its Cluster names as its endpoint, and whatever answers there (a
broken API server, a proxy gone wrong, a hostile server) could otherwise send an endless body or
watch line, and the executor or the status service would hold all of it until the kernel killed
the process: every Work of every member would stop with it. So each answer is read a chunk at a
time against a cap, and what it decodes to is bounded before it is decoded. A capped answer is a
`MemberLimitExceeded` (a `MemberError` naming the member, the request and the limit): the read
failed, and nothing about the member's objects is concluded from it.

The caps are far above anything a Kubernetes API server answers (each says why below), so a real
member never meets them. `LIMITS` is what every client uses unless given its own `Limits`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HEALTH_BYTES", "LIMITS", "LIST_BYTES", "LIST_ITEMS", "LIST_VALUES", "OBJECT_BYTES", "OBJECT_VALUES",
           "WATCH_LINE_BYTES", "Limits"]

_MiB = 1024 * 1024

# One object as JSON (a get, an apply's or a delete's answer, /version, an error's Status). etcd
# stores at most 1.5 MiB of an object (its --max-request-bytes) and the API server decodes at most
# 3 MiB of JSON in a write; read back as JSON, an object stored as protobuf grows by its field
# names, a few times at most. 16 MiB is over ten times etcd's cap: no object a real member holds
# comes near it, while a whole answer read and decoded stays within a hundred or so MiB.
OBJECT_BYTES = 16 * _MiB
# One line of a watch: one event, so one object in a small envelope; as OBJECT_BYTES. A line
# never ends for a server that sends no newline: this is where its read stops.
WATCH_LINE_BYTES = 16 * _MiB
# A list (every object of a kind, a member's nodes or pods) and discovery's documents. A pod with
# its managed fields is 4 to 8 KiB of JSON: 64 MiB is some ten thousand pods, more than most
# members run. Decoded, a list costs several times its JSON in this process (a few hundred MiB
# at the cap), which is as much as a member's one list may take of the executor or the status
# service. A member with more would need paged lists (limit/continue), which no caller makes yet.
LIST_BYTES = 64 * _MiB
# Objects in one list: work (summaries, caches, one reconcile per changed object) follows their
# number, whatever their size. Kubernetes' own scalability envelope is 150,000 pods per cluster,
# but ten thousand pods already fill LIST_BYTES; 100,000 tiny objects are a list no real member
# sends of the kinds Flotilla reads. Also how many objects a watch's cache of one kind may hold.
LIST_ITEMS = 100_000
# Values (array elements and object members) one answer may decode to, counted before it is
# decoded from the JSON's `{`, `[` and `,` (an upper bound: those inside strings count too). What
# decoding costs follows their number, not the bytes: each costs Python 36 to 90 bytes, in real
# objects as in `[{},{},...]`, whose 64 MiB would decode to some 2 GiB where 64 MiB of real pods
# (managed fields and all: one value per 16 bytes of JSON) decode to about 350 MiB. One value per
# 8 bytes of the byte cap lets every real answer through, with twice the room, and holds the
# worst an answer can cost to about twice what a real one at the byte cap does.
OBJECT_VALUES = OBJECT_BYTES // 8
LIST_VALUES = LIST_BYTES // 8
# /readyz and /healthz: "ok", or a few KiB when verbose. What says more than 1 MiB is no
# API server's answer, and is read as no answer (the member is offline, as for a timeout).
HEALTH_BYTES = _MiB


@dataclass(frozen=True)
class Limits:
    """The caps of one client (`flotilla.member.client.MemberClient`,
    `flotilla.clusterstatus.member_http.MemberSession`); the module's constants unless a test or
    a caller with its own reasons sets them. The field names are the ones errors quote."""

    object_bytes: int = OBJECT_BYTES
    object_values: int = OBJECT_VALUES
    list_bytes: int = LIST_BYTES
    list_values: int = LIST_VALUES
    list_items: int = LIST_ITEMS
    watch_line_bytes: int = WATCH_LINE_BYTES
    health_bytes: int = HEALTH_BYTES


LIMITS = Limits()
