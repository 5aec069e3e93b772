"""A stored value that does not decode is one line from flotillactl, never a traceback, and
the objects around it still print."""

from __future__ import annotations

import json

import pytest

from flotilla.api import registry
from flotilla.api.v1 import work_pb2
from flotilla.store import Store
from tests.cli_runner import flotillactl

# Field 1 (metadata) as a length-delimited value that runs past the end of the buffer.
GARBAGE = b"\x0a\xff\xff\xff\x0f\x01"


def binding(name: str) -> work_pb2.ResourceBinding:
    rb = work_pb2.ResourceBinding(api_version=registry.BINDING_API, kind="ResourceBinding")
    rb.metadata.name, rb.metadata.namespace = name, "default"
    return rb


@pytest.fixture
async def bad_and_good(store: Store) -> Store:
    await store.create(binding("good"))
    await store.client.put(b"/flotilla/resourcebindings/default/bad", GARBAGE)
    return store


async def ctl(store: Store, *args: str) -> tuple[int, str, str]:
    import asyncio

    return await asyncio.to_thread(flotillactl, "--etcd-endpoints", store.endpoints or "", *args)


LINE = "error: resourcebinding default/bad: stored value cannot be decoded"


async def test_get_list_prints_the_good_rows_and_one_line_for_the_bad(bad_and_good: Store) -> None:
    code, out, err = await ctl(bad_and_good, "get", "rb", "-n", "default")
    assert code == 1
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "good"]
    assert err.splitlines() == [LINE]


async def test_get_list_as_json_keeps_stdout_parseable(bad_and_good: Store) -> None:
    code, out, err = await ctl(bad_and_good, "get", "rb", "-A", "-o", "json")
    assert code == 1
    assert [i["metadata"]["name"] for i in json.loads(out)["items"]] == ["good"]
    assert err.splitlines() == [LINE]


@pytest.mark.parametrize("command", ["get", "describe"])
async def test_the_bad_object_by_name_is_one_line(bad_and_good: Store, command: str) -> None:
    code, out, err = await ctl(bad_and_good, command, "rb", "bad", "-n", "default")
    assert (code, out) == (1, "")
    assert err.splitlines() == [LINE]


async def test_only_bad_values_print_no_rows_and_no_no_resources_line(store: Store) -> None:
    await store.client.put(b"/flotilla/resourcebindings/default/bad", GARBAGE)
    code, out, err = await ctl(store, "get", "rb")
    assert (code, out, err.splitlines()) == (1, "", [LINE])
