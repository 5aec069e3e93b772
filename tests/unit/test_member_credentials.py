"""Reading credentials from kubeconfig files, and the errors that name what is wrong."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from flotilla.member import Credentials, load_kubeconfig


def kubeconfig(path: Path, **overrides: Any) -> Path:
    config: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config", "current-context": "one",
        "clusters": [{"name": "c1", "cluster": {"server": "https://one.example:6443/",
                                                 "certificate-authority-data": "Q0E="}},
                     {"name": "c2", "cluster": {"server": "https://two.example", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u1", "user": {"token": "secret-one"}}, {"name": "u2", "user": {"tokenFile": "token"}}],
        "contexts": [{"name": "one", "context": {"cluster": "c1", "user": "u1"}},
                     {"name": "two", "context": {"cluster": "c2", "user": "u2"}}],
    }
    config.update(overrides)
    target = path / "config.yaml"
    target.write_text(yaml.safe_dump(config))
    return target


def test_current_context_is_the_default(tmp_path: Path) -> None:
    creds = load_kubeconfig(kubeconfig(tmp_path))
    assert creds == Credentials(server="https://one.example:6443", token="secret-one", ca_data="Q0E=")


def test_named_context_with_token_file_and_insecure_flag(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    creds = load_kubeconfig(kubeconfig(tmp_path), context="two")
    assert creds == Credentials(server="https://two.example", token="from-file", insecure_skip_tls_verify=True)


def test_certificate_authority_file_is_read_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"PEM")
    clusters = [{"name": "c1", "cluster": {"server": "https://x", "certificate-authority": "ca.crt"}}]
    assert load_kubeconfig(kubeconfig(tmp_path, clusters=clusters)).ca_data == "UEVN"


def test_token_does_not_appear_in_repr(tmp_path: Path) -> None:
    assert "secret-one" not in repr(load_kubeconfig(kubeconfig(tmp_path)))


def test_a_proxy_url_that_does_not_parse_is_shown_as_none_and_hides_its_password() -> None:
    shown = repr(Credentials(server="https://m", token="t", proxy_url="http://user:pw@[::1:3128"))
    assert "(not a URL)" in shown and "pw" not in shown


@pytest.mark.parametrize(
    ("overrides", "context", "message"),
    [
        ({}, "three", "context 'three' not found"),
        ({"current-context": ""}, None, "no current-context"),
        ({"clusters": [{"name": "c1", "cluster": {"certificate-authority-data": "Q0E="}}]}, None,
         "cluster 'c1' has no server"),
        ({"users": [{"name": "u1", "user": {"client-certificate-data": "x"}}]}, None,
         "user 'u1' has no token .*client-certificate-data"),
        ({"users": []}, None, "user 'u1' not found"),
        ({"contexts": [{"name": "one", "context": {"cluster": "c1"}}]}, None, "names no user"),
    ],
)
def test_problems_are_named(tmp_path: Path, overrides: dict[str, Any], context: str | None, message: str) -> None:
    path = kubeconfig(tmp_path, **overrides)
    with pytest.raises(ValueError, match=message) as raised:
        load_kubeconfig(path, context)
    assert str(path) in str(raised.value)


def test_unreadable_or_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read kubeconfig"):
        load_kubeconfig(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="not a kubeconfig"):
        load_kubeconfig(bad)
    (tmp_path / "token").write_text("")
    with pytest.raises(ValueError, match=r"tokenFile .* is empty"):
        load_kubeconfig(kubeconfig(tmp_path), "two")
