"""A member's cached object is trusted for status only once it has seen the last apply."""

from __future__ import annotations

from typing import Any

import pytest

from services.executor.applied import AppliedGenerations, member_key

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "default", "name": "web"}}
KEY = member_key("member2", DEPLOYMENT)


def obj(generation: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "generation": generation}}


@pytest.mark.parametrize(("applied", "observed", "behind"), [
    (None, obj(1), False),     # never applied here (e.g. before a restart): trust the cache
    (obj(2), obj(1), True),    # the cache still holds the object from before the scale-up
    (obj(2), obj(2), False),   # the apply's own event has arrived
    (obj(2), obj(3), False),   # something newer still
    (obj(2), {"metadata": {}}, False),  # kinds without a generation
    ({"metadata": {}}, obj(1), False),
    (obj(True), obj(0), False),  # not an integer generation
])
def test_behind(applied: dict[str, Any] | None, observed: dict[str, Any], behind: bool) -> None:
    generations = AppliedGenerations()
    if applied is not None:
        generations.record(KEY, applied, 0.0)
    assert generations.behind(KEY, observed) is behind


def test_forget_after_delete() -> None:
    generations = AppliedGenerations()
    generations.record(KEY, obj(5), 0.0)
    generations.forget(KEY)
    assert not generations.behind(KEY, obj(1))
    assert KEY == ("member2", "apps/v1", "Deployment", "default", "web")


def test_an_apply_is_unreported_until_its_member_event() -> None:
    generations = AppliedGenerations()
    assert generations.unreported_for(KEY, 10.0) is None  # never applied here
    generations.record(KEY, obj(1), 10.0)
    assert generations.unreported_for(KEY, 12.5) == 2.5
    generations.reported(KEY)
    assert generations.unreported_for(KEY, 13.0) is None
    generations.record(KEY, obj(2), 20.0)
    generations.forget(KEY)  # deleted from the member by this executor
    assert generations.unreported_for(KEY, 21.0) is None
