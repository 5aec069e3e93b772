"""An informer cache without etcd, for table tests of routing functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from flotilla.api.keys import object_key


class Cache:
    def __init__(self, objects: Iterable[Any] = (), synced: bool = True,
                 **indexers: Callable[[Any], list[str]]) -> None:
        self.objects = {object_key(o.metadata.namespace, o.metadata.name): o for o in objects}
        self.indexers = indexers
        self.synced = synced

    def get(self, key: str) -> Any | None:
        return self.objects.get(key)

    def list(self) -> list[Any]:
        return list(self.objects.values())

    def add_indexer(self, name: str, func: Callable[[Any], list[str]]) -> None:
        self.indexers[name] = func

    def by_index(self, name: str, value: str) -> list[Any]:
        func = self.indexers[name]
        return [o for k, o in sorted(self.objects.items()) if value in func(o)]

    def index_keys(self, name: str, value: str) -> frozenset[str]:
        func = self.indexers[name]
        return frozenset(k for k, o in self.objects.items() if value in func(o))
