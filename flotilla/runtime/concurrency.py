"""How many keys a controller works on at once, unless its service's flag says otherwise.

Karmada's defaults are 5 for `--concurrent-resourcebinding-syncs` and `--concurrent-work-syncs`.
A Flotilla worker is a coroutine on its service's event loop, and most of a pass that writes is
spent waiting for etcd (or, for an apply, for the member): with a handful of workers a failover
of a thousand bindings queues in front of the executor's binding controller and its execution
controller while the process has CPU to spare. More writes under way at once also travel
together (flotilla.store.group_commit), so etcd and every watcher handle fewer, larger messages:
more workers make a failover both faster and cheaper in CPU (docs/performance.md, "What the
defaults rest on"). A pass that only reads costs the same either way, and a key is never worked
on twice at once.
"""

from __future__ import annotations

BINDING_SYNCS = 64  # bindings turned into Works, their status aggregated, their evictions assessed
WORK_SYNCS = 128  # Works applied to members, their members' status reported back
