"""Issue 36: admission of a Cluster's spec.proxyURL and spec.proxyHeader (the proxy every request
to the member goes through): http:// and https:// proxies with a host; socks5 refused as not
supported, with the field named."""

from __future__ import annotations

import pytest

from flotilla.api.v1.cluster_pb2 import Cluster
from services.webhook.rules.cluster import validate_cluster


def cluster(proxy_url: str = "", **header: str) -> Cluster:
    c = Cluster()
    c.metadata.name = "member1"
    c.spec.sync_mode = "Push"
    c.spec.api_endpoint = "https://member1.example:6443"
    c.spec.proxy_url = proxy_url
    c.spec.proxy_header.update(header)
    return c


def errors(c: Cluster) -> list[tuple[str, str]]:
    return [(e.path, e.reason) for e in validate_cluster(c)]


@pytest.mark.parametrize("proxy_url", [
    "http://proxy.example:3128", "https://proxy.example", "http://user:pw@10.0.0.1:8080", "http://[::1]:3128",
])
def test_http_and_https_proxies_are_admitted(proxy_url: str) -> None:
    assert errors(cluster(proxy_url, **{"Proxy-Authorization": "Basic eA=="})) == []


@pytest.mark.parametrize(("proxy_url", "header", "field", "message"), [
    ("socks5://proxy.example:1080", {}, "spec.proxyURL", "not supported by Flotilla: spec.proxyURL with scheme socks5"),
    ("ftp://proxy.example", {}, "spec.proxyURL", "must be an http:// or https:// URL with a host"),
    ("proxy.example:3128", {}, "spec.proxyURL", "must be an http:// or https:// URL with a host"),
    ("http://", {}, "spec.proxyURL", "must be an http:// or https:// URL with a host"),
    ("http://proxy.example:port", {}, "spec.proxyURL", "must be an http:// or https:// URL with a host"),
    # An IPv6 bracket never closed: urlsplit raises, and the field is named all the same.
    ("http://[::1:3128", {}, "spec.proxyURL", "must be an http:// or https:// URL with a host"),
    ("", {"Proxy-Authorization": "x"}, "spec.proxyHeader", "needs spec.proxyURL"),
    ("http://p:1", {"Bad Name": "x"}, "spec.proxyHeader[Bad Name]", "must be an HTTP header name"),
    ("http://p:1", {"X-A": "a\r\nHost: evil"}, "spec.proxyHeader[X-A]", "must not contain CR, LF or NUL"),
])
def test_a_proxy_flotilla_cannot_use_is_refused_with_its_field(
        proxy_url: str, header: dict[str, str], field: str, message: str) -> None:
    found = errors(cluster(proxy_url, **header))
    assert len(found) == 1 and found[0][0] == field and found[0][1].startswith(message), found


@pytest.mark.parametrize("endpoint", ["https://[172.23.0.7:6443", "https://172.23.0.7]:6443", "http://m:6443", "https://"])
def test_an_api_endpoint_that_is_not_an_https_url_with_a_host_is_refused_with_its_field(endpoint: str) -> None:
    c = cluster()
    c.spec.api_endpoint = endpoint
    found = errors(c)
    assert len(found) == 1 and found[0][0] == "spec.apiEndpoint" and found[0][1].startswith(
        "must be an https:// URL with a host"), found
