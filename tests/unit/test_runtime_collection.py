"""A service freezes what it imported before its loop starts, and collects young objects less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from flotilla.runtime import collection


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored")
def test_what_lives_from_the_start_is_left_out_of_collections() -> None:
    gc.unfreeze()
    imported = [{"n": i} for i in range(1000)]
    collection.settle_for_service()
    assert gc.get_freeze_count() >= len(imported)
    _, middle, old = gc.get_threshold()
    assert gc.get_threshold() == (collection.YOUNG_THRESHOLD, middle, old)
    made_later = [{"n": i} for i in range(1000)]
    frozen = gc.get_freeze_count()
    gc.collect()
    assert gc.get_freeze_count() == frozen, f"only what was there at the start is frozen, not {len(made_later)} more"
