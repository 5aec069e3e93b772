"""`--etcd-endpoints` to one gRPC target over every member (flotilla.store.connect)."""

from __future__ import annotations

import pytest

from flotilla.store.connect import channel_target, make_client


def test_one_endpoint_is_dialled_as_given() -> None:
    assert channel_target("http://etcd.example:2379") == "etcd.example:2379"
    assert channel_target("127.0.0.1") == "127.0.0.1:2379"
    assert channel_target("http://[::1]:2380") == "[::1]:2380"


def test_several_endpoints_make_one_target_of_every_address() -> None:
    assert (channel_target("http://127.0.0.1:2379, http://localhost:2380,127.0.0.2:2381")
            == "ipv4:127.0.0.1:2379,127.0.0.1:2380,127.0.0.2:2381")
    assert channel_target("http://[::1]:1,http://[::2]:2") == "ipv6:[::1]:1,[::2]:2"


@pytest.mark.parametrize(("endpoints", "message"), [
    ("http://a.example:2379,http://b.example:2379", "must all be IPv4 or all IPv6 addresses"),
    ("http://127.0.0.1:1,http://[::1]:2", "must all be IPv4 or all IPv6 addresses"),
    ("http://:2379", "no host"),
])
def test_endpoints_that_cannot_make_one_target_are_refused_by_name(endpoints: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        channel_target(endpoints)


async def test_the_client_dials_the_whole_target() -> None:
    client = make_client("http://127.0.0.1:1,http://127.0.0.1:2")
    assert f"{client._host}:{client._port}" == "ipv4:127.0.0.1:1,127.0.0.1:2"
