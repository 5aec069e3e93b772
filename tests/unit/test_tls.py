"""Which certificates a process uses, and what flotillactl shows of a Secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from flotilla.cli.printers import REDACTED, hide_secret_values
from flotilla.security import context, tls


@pytest.fixture
def certificates(tmp_path: Path) -> dict[str, tls.TLSFiles]:
    return tls.plane_certificates(tmp_path / "pki", ["etcd", "webhook", "sim"], services={"webhook": ["webhook"]},
                                  clients=["sim"])


def test_each_process_gets_its_name_as_identity_and_no_certificate_serves_and_calls(
        certificates: dict[str, tls.TLSFiles]) -> None:
    # (file, common name, may serve, may call): a service serves with one certificate and calls
    # etcd with another; tools and the simulator only call; etcd, whose peers call it, does both.
    for file, name, server, client in (("webhook", "webhook", True, False), ("webhook-client", "webhook", False, True),
                                       ("admin", "admin", False, True), ("sim", "sim", False, True),
                                       ("etcd", "etcd", True, True)):
        cert = x509.load_pem_x509_certificate(Path(certificates[file].cert).read_bytes())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == name
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert (ExtendedKeyUsageOID.SERVER_AUTH in usages, ExtendedKeyUsageOID.CLIENT_AUTH in usages) == (
            server, client), file
    served = x509.load_pem_x509_certificate(Path(certificates["webhook"].cert).read_bytes())
    names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "flotilla-webhook" in names.get_values_for_type(x509.DNSName)
    assert Path(certificates["webhook"].key).stat().st_mode & 0o077 == 0


def test_the_ca_is_kept_and_reused(tmp_path: Path, certificates: dict[str, tls.TLSFiles]) -> None:
    ca = Path(certificates["etcd"].ca).read_bytes()
    again = tls.plane_certificates(tmp_path / "pki", ["etcd"])
    assert Path(again["etcd"].ca).read_bytes() == ca
    # A CA of one's own signs another plane's certificates.
    pki = tmp_path / "pki"
    other = tls.plane_certificates(tmp_path / "other", ["etcd"], pki / "ca.crt", pki / "ca.key")
    assert Path(other["etcd"].ca).read_bytes() == ca


@pytest.mark.parametrize(("ca", "cert", "key", "message"), [
    ("ca.crt", "", "", "the certificate and key file is missing"),
    ("", "c.crt", "c.key", "the CA file is missing"),
    ("ca.crt", "c.crt", "nope.key", "nope.key does not exist"),
])
def test_certificate_flags_go_together(tmp_path: Path, ca: str, cert: str, key: str, message: str) -> None:
    for name in ("ca.crt", "c.crt", "c.key"):
        (tmp_path / name).write_text("x")

    def path(name: str) -> str:
        return str(tmp_path / name) if name else ""

    with pytest.raises(tls.TLSError, match=message):
        tls.TLSFiles.given(path(ca), path(cert), path(key), "--tls-*")
    assert tls.TLSFiles.given(None, None, None, "--tls-*") is None


def test_etcd_tls_follows_the_scheme(monkeypatch: pytest.MonkeyPatch, certificates: dict[str, tls.TLSFiles]) -> None:
    for name in (tls.ENV_ETCD_CA, tls.ENV_ETCD_CERT, tls.ENV_ETCD_KEY):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLOTILLA_CONFIG", "/nonexistent/pointer")
    assert context.etcd_client_tls("http://127.0.0.1:2379") is None
    with pytest.raises(tls.TLSError, match=r"etcd at https://127\.0\.0\.1:2379 speaks TLS: give its CA"):
        context.etcd_client_tls("https://127.0.0.1:2379")
    for name, value in tls.process_env(certificates["admin"]).items():
        monkeypatch.setenv(name, value)
    assert context.etcd_client_tls("https://127.0.0.1:2379") == certificates["admin"]
    assert context.etcd_client_tls("http://127.0.0.1:2379") is None


@pytest.mark.parametrize(("body", "expected"), [
    ({"data": {"token": "c2VjcmV0"}}, {"data": {"token": "<redacted: 6 bytes>"}}),
    ({"stringData": {"password": "hunter2"}}, {"stringData": {"password": "<redacted: 7 bytes>"}}),
    ({"data": {"odd": "not base64!"}}, {"data": {"odd": "<redacted: 11 bytes>"}}),
    ({"type": "Opaque"}, {"type": "Opaque"}),
])
def test_secret_values_are_redacted(body: dict[str, object], expected: dict[str, object]) -> None:
    hide_secret_values(body, REDACTED)
    assert body == expected
