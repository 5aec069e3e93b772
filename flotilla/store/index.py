"""An informer's index: the keys of the cached objects under each value an index function gives.

Most values of most indices have one key (a Work's member object, a binding's id or key), and a
set of one costs about 200 bytes where the key itself is already held by the cache; a value with
one key holds that key, and only a value with several holds a set.
"""

from __future__ import annotations

from collections.abc import Iterable


class Index:
    __slots__ = ("_keys",)

    def __init__(self) -> None:
        self._keys: dict[str, str | set[str]] = {}

    def keys(self, value: str) -> frozenset[str]:
        found = self._keys.get(value)
        if found is None:
            return frozenset()
        return frozenset((found,)) if isinstance(found, str) else frozenset(found)

    def values(self) -> frozenset[str]:
        return frozenset(self._keys)

    def add(self, value: str, key: str) -> None:
        found = self._keys.get(value)
        if found is None:
            self._keys[value] = key
        elif isinstance(found, str):
            if found != key:
                self._keys[value] = {found, key}
        else:
            found.add(key)

    def discard(self, value: str, key: str) -> None:
        found = self._keys.get(value)
        if found is None:
            return
        if isinstance(found, str):
            if found == key:
                del self._keys[value]
            return
        found.discard(key)
        if len(found) == 1:
            self._keys[value] = next(iter(found))
        elif not found:
            del self._keys[value]

    def move(self, key: str, before: Iterable[str], after: Iterable[str]) -> None:
        """The key's values went from `before` to `after` (either may be empty)."""
        after = set(after)
        for value in set(before) - after:
            self.discard(value, key)
        for value in after:
            self.add(value, key)
