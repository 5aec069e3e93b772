"""A full collection in a simulator process freezes what survived it, so the next one is short."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from flotilla.runtime.collection import YOUNG_THRESHOLD
from sim import collection


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    if collection._after in gc.callbacks:
        gc.callbacks.remove(collection._after)
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored")
def test_survivors_of_a_full_collection_are_frozen() -> None:
    gc.unfreeze()
    collection.keep_full_collections_short()
    collection.keep_full_collections_short()  # once is enough
    assert gc.callbacks.count(collection._after) == 1
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD, "young collections as rare as in the services"
    kept = [{"n": i} for i in range(1000)]
    gc.collect(1)
    assert gc.get_freeze_count() == 0, "a young collection freezes nothing"
    gc.collect()
    assert gc.get_freeze_count() >= len(kept)
