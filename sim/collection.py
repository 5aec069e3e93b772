"""Keeping Python's full garbage collections short in a simulator process.

A simulator holding 10,000 Deployments and their pods has millions of long-lived objects, and a
full collection walks all of them, for hundreds of milliseconds with the loop stopped, so a
`/readyz` that arrives meanwhile waits that long.
After each full collection the survivors are frozen (`gc.freeze`): the next full collection
walks only what was made since. The cost: a cycle among frozen objects that later becomes
garbage is never freed. The simulator's state is plain dicts and lists, and a simulator is not
a long-lived production process, so that is a good trade.

Young collections are ten times rarer than Python's default, as in the services
(`flotilla.runtime.collection`): fewer of the objects in flight are caught alive and walked again
in the older generations.
"""

from __future__ import annotations

import gc
from typing import Any

from flotilla.runtime.collection import collect_young_less_often


def _after(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def keep_full_collections_short() -> None:
    if _after not in gc.callbacks:
        gc.callbacks.append(_after)
    collect_young_less_often()
