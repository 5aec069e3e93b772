"""An informer's index (flotilla.store.index): the same keys under each value as a plain mapping
of sets would hold, whatever the order of changes, with a value of one key held without a set."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flotilla.store.index import Index

KEYS = st.sampled_from([f"default/app-{i}" for i in range(5)])
VALUES = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3)


@given(st.lists(st.tuples(KEYS, VALUES), max_size=40))
def test_moves_leave_the_keys_a_mapping_of_sets_would_hold(changes: list[tuple[str, list[str]]]) -> None:
    index = Index()
    current: dict[str, list[str]] = {}
    for key, values in changes:
        index.move(key, current.get(key, []), values)
        current[key] = values
    expected: dict[str, set[str]] = {}
    for key, values in current.items():
        for value in values:
            expected.setdefault(value, set()).add(key)
    assert index.values() == frozenset(expected)
    for value in ["a", "b", "c", "d"]:
        assert index.keys(value) == frozenset(expected.get(value, set()))


def test_a_value_of_one_key_holds_no_set() -> None:
    index = Index()
    index.add("member1/apps/v1/Deployment/default/app-0", "karmada-es-member1/app-0")
    index.add("shared", "k1")
    index.add("shared", "k2")
    assert index._keys["member1/apps/v1/Deployment/default/app-0"] == "karmada-es-member1/app-0"
    assert isinstance(index._keys["shared"], set)
    index.discard("shared", "k1")
    assert index._keys["shared"] == "k2"
    index.discard("shared", "k2")
    assert index.values() == frozenset({"member1/apps/v1/Deployment/default/app-0"})

