"""The simulator's own certificate authority and the serving certificate it signs.

The CA is made once and kept in `<data-dir>/pki/`, so kubeconfigs written by an earlier run (and
stored by Flotilla at join time) keep verifying after a restart. The serving certificate is made
at every start, for 127.0.0.1, localhost and the address the server binds.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import socket
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_CA_LIFETIME = timedelta(days=3650)
_SERVING_LIFETIME = timedelta(days=365)
# Clocks of clients and a freshly made certificate may disagree by a little.
_BACKDATE = timedelta(hours=1)


class Authority:
    """The CA (loaded from or written to `directory`) and a serving certificate for `hosts`,
    written as `<serving>.crt`/`.key` (each process of a sharded simulator has its own)."""

    def __init__(self, directory: Path, hosts: list[str], serving: str = "serving") -> None:
        self.directory = directory
        self._ca_key, self._ca_cert = ensure_ca(directory)
        self.ca_pem = self._ca_cert.public_bytes(serialization.Encoding.PEM)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _serving_cert(key, self._ca_key, self._ca_cert, hosts)
        self.cert_path, self.key_path = directory / f"{serving}.crt", directory / f"{serving}.key"
        _write(self.key_path, _key_pem(key), private=True)
        _write(self.cert_path, cert.public_bytes(serialization.Encoding.PEM))

    @property
    def ca_data(self) -> str:
        """The CA as a kubeconfig's certificate-authority-data (base64 of the PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_path, self.key_path)
        return context


def ensure_ca(directory: Path) -> tuple[Any, x509.Certificate]:
    """The CA kept in `directory`, made there first if missing. A sharded simulator's parent calls
    this before starting its processes, so they all load the one CA instead of racing to make it."""
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "ca.crt", directory / "ca.key"
    if cert_path.exists() and key_path.exists():
        return (serialization.load_pem_private_key(key_path.read_bytes(), password=None),
                x509.load_pem_x509_certificate(cert_path.read_bytes()))
    key, cert = _new_ca()
    _write(key_path, _key_pem(key), private=True)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    return key, cert


def serving_hosts(bind_host: str) -> list[str]:
    """Names the serving certificate covers: loopback, and the bound address (the machine's name
    too when it binds every interface)."""
    hosts = ["127.0.0.1", "localhost"]
    if bind_host in ("0.0.0.0", "::", ""):
        hosts.append(socket.gethostname())
    elif bind_host not in hosts:
        hosts.append(bind_host)
    return hosts


def _new_ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flotilla-sim-ca")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE).not_valid_after(now + _CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _serving_cert(key: ec.EllipticCurvePrivateKey, ca_key: object, ca_cert: x509.Certificate,
                  hosts: list[str]) -> x509.Certificate:
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the simulator's CA key is not an EC key (was pki/ca.key replaced?)")
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE).not_valid_after(now + _SERVING_LIFETIME)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    # Written to a temporary name then renamed, so a concurrent reader never sees half a file.
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(temporary, path)
