"""A list is read from etcd in pages at one revision (flotilla/store/objects.py kv_range): every
object comes back whatever the page size, a write made between two pages is not in the list (one
snapshot, as Kubernetes' paginated lists are), and a page too large for a gRPC message is asked
for again smaller. Without pages, a list of 40,000 bindings (71 MB) failed every informer."""

from __future__ import annotations

from typing import Any

import pytest

from flotilla.api import registry
from flotilla.store import Store, objects
from tests.factories import make_cluster


async def test_a_list_in_pages_is_whole_and_one_snapshot(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(10):
        await store.create(make_cluster(f"m{i:02d}"))
    monkeypatch.setattr(objects, "RANGE_PAGE", 3)
    pages: list[int] = []
    original = store._range_page

    async def page(start: bytes, end: bytes, limit: int, revision: int) -> Any:
        if len(pages) == 1:
            await store.create(make_cluster("z-written-between-pages"))
        pages.append(revision)
        return await original(start, end, limit, revision)

    monkeypatch.setattr(store, "_range_page", page)
    listed = await store.list(registry.CLUSTER)
    assert [c.metadata.name for c in listed.items] == [f"m{i:02d}" for i in range(10)]
    assert len(pages) == 4 and pages[0] == 0 and set(pages[1:]) == {listed.revision}
    assert (await store.get(registry.CLUSTER, "", "z-written-between-pages")) is not None


async def test_a_page_too_large_is_asked_for_again_smaller(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(6):
        await store.create(make_cluster(f"m{i}"))
    limits: list[int] = []
    original = store._range_page

    async def page(start: bytes, end: bytes, limit: int, revision: int) -> Any:
        limits.append(limit)
        if limit > 2:
            raise objects._PageTooLarge("Received message larger than max")
        return await original(start, end, limit, revision)

    monkeypatch.setattr(store, "_range_page", page)
    listed = await store.list(registry.CLUSTER)
    assert len(listed.items) == 6
    assert limits[:10] == [1000, 500, 250, 125, 62, 31, 15, 7, 3, 1] and set(limits[9:]) == {1}
