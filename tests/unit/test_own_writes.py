"""A controller's own writes coming back through its informer: recognised once, by version."""

from __future__ import annotations

from flotilla.api.events import EventType, WatchEvent
from flotilla.api.v1 import work_pb2
from flotilla.runtime.own_writes import OwnWrites


def work(name: str, version: str) -> work_pb2.Work:
    w = work_pb2.Work()
    w.metadata.namespace, w.metadata.name, w.metadata.resource_version = "karmada-es-m1", name, version
    return w


def test_a_write_echoes_once_and_only_at_its_own_version() -> None:
    own = OwnWrites()
    own.record(work("a", "7"))
    assert not own.echo(WatchEvent(EventType.MODIFIED, work("a", "6"), work("a", "5")))  # an older one
    assert own.echo(WatchEvent(EventType.ADDED, work("a", "7")))
    assert not own.echo(WatchEvent(EventType.ADDED, work("a", "7")))  # forgotten once seen
    own.record(work("a", "9"))
    assert not own.echo(WatchEvent(EventType.MODIFIED, work("a", "8"), work("a", "7")))  # someone else's
    assert not own.echo(WatchEvent(EventType.DELETED, work("a", "9")))  # a deletion is never its own echo
    assert not own.echo(WatchEvent(EventType.MODIFIED, work("b", "9"), work("b", "8")))


def test_only_the_newest_writes_are_remembered() -> None:
    own = OwnWrites(remembered=2)
    for name, version in (("a", "1"), ("b", "2"), ("c", "3")):
        own.record(work(name, version))
    assert not own.echo(WatchEvent(EventType.ADDED, work("a", "1")))
    assert own.echo(WatchEvent(EventType.ADDED, work("b", "2")))
    assert own.echo(WatchEvent(EventType.ADDED, work("c", "3")))
