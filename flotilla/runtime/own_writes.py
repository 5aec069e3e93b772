"""The versions a controller wrote itself, so that the watch events they cause do not bring the
object straight back to it.

A pass that wrote an object had read everything it decided from; the informer's echo of that
write (a Work the binding controller has just created, say) would only make it decide the same
again. What someone else writes in between has a version of its own and passes. Forgotten on
first sight, and bounded: a version never seen again (a relist that went past it) falls out
with age.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from google.protobuf.message import Message

from flotilla.api.events import EventType, WatchEvent
from flotilla.store.base import meta_of, object_key_of

REMEMBERED = 10_000


class OwnWrites:
    def __init__(self, remembered: int = REMEMBERED) -> None:
        self._written: OrderedDict[str, str] = OrderedDict()
        self._remembered = remembered

    def record(self, written: Message) -> None:
        """`written` as the store returned it: its resourceVersion is the write's revision."""
        key = object_key_of(written)
        self._written.pop(key, None)
        self._written[key] = meta_of(written).resource_version
        while len(self._written) > self._remembered:
            self._written.popitem(last=False)

    def echo(self, event: WatchEvent[Any]) -> bool:
        """Whether the event is one of these writes coming back (and then forget it)."""
        if event.type is EventType.DELETED:
            return False
        key = object_key_of(event.obj)
        version = meta_of(event.obj).resource_version
        if not version or self._written.get(key) != version:
            return False
        del self._written[key]
        return True
