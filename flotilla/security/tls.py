"""Certificates: a local certificate authority and the certificates it signs, and the TLS
settings a process uses to serve and to call.

`flotilla up` keeps a plane's CA in `<data-dir>/pki/` and signs one certificate per process
there: etcd's, one per service (its common name is the service's identity) and `admin`, the
client certificate `flotillactl` finds through the current context. The simulator signs its
serving certificate with a CA of its own made by the same code.

Which files a process uses: its flags (`--tls-*`, `--etcd-*`), else the `FLOTILLA_*`
variables named below, else (for tools) the current context. An `https://` etcd endpoint
means TLS to etcd; an `http://` one means plain, whatever certificates are configured.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import secrets
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from flotilla.security.rbac import MASTERS

# gRPC: a service's serving (and calling) identity, or a tool's client identity.
ENV_CA, ENV_CERT, ENV_KEY = "FLOTILLA_TLS_CA", "FLOTILLA_TLS_CERT", "FLOTILLA_TLS_KEY"
# etcd's client side, named as etcdctl names them.
ENV_ETCD_CA, ENV_ETCD_CERT, ENV_ETCD_KEY = "FLOTILLA_ETCD_CACERT", "FLOTILLA_ETCD_CERT", "FLOTILLA_ETCD_KEY"

CA_LIFETIME = timedelta(days=3650)
LEAF_LIFETIME = timedelta(days=365)
# Clocks of clients and a freshly made certificate may disagree by a little.
_BACKDATE = timedelta(hours=1)
LOOPBACK = ("127.0.0.1", "localhost")


class TLSError(ValueError):
    """Certificate files missing or unusable; the message names the file or flag."""


@dataclass(frozen=True)
class TLSFiles:
    """A CA bundle to verify the other side, and this side's certificate and key."""

    ca: str
    cert: str
    key: str

    @classmethod
    def given(cls, ca: str | None, cert: str | None, key: str | None, what: str) -> TLSFiles | None:
        """All three, or none (None); a clear error naming what is missing otherwise."""
        values = {"CA": ca or "", "certificate": cert or "", "key": key or ""}
        if not any(values.values()):
            return None
        missing = [name for name, value in values.items() if not value]
        if missing:
            raise TLSError(f"{what}: the {' and '.join(missing)} file is missing (give CA, certificate and key)")
        for value in values.values():
            if not Path(value).is_file():
                raise TLSError(f"{what}: {value} does not exist")
        return cls(values["CA"], values["certificate"], values["key"])

    def read(self) -> tuple[bytes, bytes, bytes]:
        return Path(self.ca).read_bytes(), Path(self.cert).read_bytes(), Path(self.key).read_bytes()

    def server_credentials(self) -> grpc.ServerCredentials:
        """Mutual TLS: a caller without a certificate this CA signed is refused at the handshake."""
        ca, cert, key = self.read()
        return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=True)

    def channel_credentials(self) -> grpc.ChannelCredentials:
        ca, cert, key = self.read()
        return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)

    def client_ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        context.load_cert_chain(self.cert, self.key)
        return context


def from_env(ca_var: str, cert_var: str, key_var: str) -> TLSFiles | None:
    return TLSFiles.given(os.environ.get(ca_var), os.environ.get(cert_var), os.environ.get(key_var),
                          f"{ca_var}/{cert_var}/{key_var}")


def is_tls_endpoint(endpoints: str) -> bool:
    return endpoints.split(",")[0].strip().lower().startswith("https://")


def grpc_channel(address: str, tls: TLSFiles | None, server_name: str = "") -> grpc.aio.Channel:
    """A channel to a service: mutual TLS with `tls`, plain without. `server_name` is the name
    its certificate must carry when that is not the address's host (a pod IP, say): see
    service_server_name."""
    if tls is None:
        return grpc.aio.insecure_channel(address)
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    return grpc.aio.secure_channel(address, tls.channel_credentials(), options=options)


def common_name(cert_path: str) -> str:
    cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def service_server_name(service: str) -> str:
    """The name a service's serving certificate carries and its callers verify, whatever address
    they reach it at: `flotilla-<service>` (its Kubernetes Service's name in deploy/k8s). Callers
    take it from the service they mean to call, never from what an endpoint record says."""
    return "flotilla-" + service.replace("_", "-")


def peer_identity(context: grpc.aio.ServicerContext) -> str:
    """The common name of the caller's verified client certificate; "" without one."""
    names = context.auth_context().get("x509_common_name") or []
    return names[0].decode() if names else ""


def peer_groups(context: grpc.aio.ServicerContext) -> tuple[str, ...]:
    """The organizations of the caller's verified client certificate: its groups, as
    Kubernetes' x509 authenticator reads them (CN the user, each O a group)."""
    certificates = context.auth_context().get("x509_pem_cert") or []
    return organizations(certificates[0]) if certificates else ()


@functools.lru_cache(maxsize=1024)
def organizations(pem: bytes) -> tuple[str, ...]:
    cert = x509.load_pem_x509_certificate(pem)
    return tuple(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))


# -- the certificate authority ---------------------------------------------------------


class Authority:
    """A CA kept in `directory` (ca.crt, ca.key): loaded when there, made otherwise, or taken
    from the given files (a CA of the user's own)."""

    def __init__(self, directory: Path, common_name: str, ca_cert: Path | None = None,
                 ca_key: Path | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = ca_cert or directory / "ca.crt", ca_key or directory / "ca.key"
        if cert_path.exists() and key_path.exists():
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise TLSError(f"{key_path} is not an EC private key")
            self.key = key
            self.cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        elif ca_cert or ca_key:
            raise TLSError(f"CA files {cert_path} and {key_path} must both exist")
        else:
            self.key, self.cert = new_ca(common_name)
            write_file(key_path, key_pem(self.key), private=True)
            write_file(cert_path, self.cert.public_bytes(serialization.Encoding.PEM))
        self.ca_pem = self.cert.public_bytes(serialization.Encoding.PEM)
        self.ca_path = directory / "ca.crt"
        if cert_path != self.ca_path:
            write_file(self.ca_path, self.ca_pem)

    def issue(self, name: str, common_name: str, hosts: list[str], *, server: bool = True,
              client: bool = True, groups: Sequence[str] = (), lifetime: timedelta = LEAF_LIFETIME) -> TLSFiles:
        """A new key and certificate `<name>.crt`/`<name>.key` in the directory; `groups` are its
        organizations, the groups RBAC knows its holder by."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = leaf_cert(key, self.key, self.cert, common_name, hosts, server=server, client=client,
                         groups=groups, lifetime=lifetime)
        files = TLSFiles(str(self.ca_path), str(self.directory / f"{name}.crt"), str(self.directory / f"{name}.key"))
        write_file(Path(files.key), key_pem(key), private=True)
        write_file(Path(files.cert), cert.public_bytes(serialization.Encoding.PEM))
        return files


def new_ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE).not_valid_after(now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def leaf_cert(key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate,
              common_name: str, hosts: list[str], *, server: bool = True, client: bool = False,
              lifetime: timedelta = LEAF_LIFETIME, groups: Sequence[str] = ()) -> x509.Certificate:
    usages = [usage for usage, wanted in ((ExtendedKeyUsageOID.SERVER_AUTH, server),
                                          (ExtendedKeyUsageOID.CLIENT_AUTH, client)) if wanted]
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    now = datetime.now(UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                                 *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups)]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE).not_valid_after(now + lifetime)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


# Attempts at a fresh temporary name before giving up: each collision means a file is in the way
# under a random name, which only someone guessing (or a crowd of writers) can cause.
_TEMPORARY_ATTEMPTS = 16


def write_file(path: Path, data: bytes, private: bool = False) -> None:
    """Replace `path` with a regular file holding `data`: mode 0600 when `private` (keys, key files),
    0644 otherwise, whatever the umask and whatever was at `path` before.

    Each step is there because a key file is worth attacking:
    - The bytes go to a fresh temporary name beside `path` (a random suffix, same directory so the
      rename stays on one filesystem), created with O_CREAT|O_EXCL|O_NOFOLLOW: a file someone left
      under that name is never reused (with its mode, its owner, its other hard links), and a
      symlink there is never followed, so nothing is written through it.
    - fchmod before the first byte: the file is never readable by others, not even for a moment,
      and the umask does not decide.
    - fsync, then os.replace: a reader, or a crash, sees the old file or the whole new one.
    - A symlink at `path` itself is replaced, not followed: os.replace renames over the link, so
      the file it pointed to is left as it was and `path` becomes our regular file.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(_TEMPORARY_ATTEMPTS):
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(temporary, flags, 0o600)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{path}: no free temporary name beside it after {_TEMPORARY_ATTEMPTS} tries")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600 if private else 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; best effort (not every filesystem syncs a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


CLIENT_SUFFIX = "-client"


def plane_certificates(directory: Path, processes: list[str], ca_cert: Path | None = None,
                       ca_key: Path | None = None, groups: Mapping[str, Sequence[str]] | None = None,
                       services: Mapping[str, Sequence[str]] | None = None,
                       clients: Sequence[str] = (), identities: Mapping[str, str] | None = None
                       ) -> dict[str, TLSFiles]:
    """What `flotilla up` gives each process it starts, signed by the plane's CA (made in
    `directory`, or the given one); the common name is the process's name (in the `groups`
    given for it):

    - a process serving services (`services[name]`, their server names in it): a serving
      certificate `name` that cannot call, and a client certificate `name-client` (for etcd)
      that cannot serve, so neither is good for the other's job;
    - a process that only calls (`clients`): a client certificate `name`;
    - any other (etcd, whose peers call each other; a test's all-purpose one): one for both;
    - `admin`, the tools' client certificate, in the `system:masters` group.

    A process's client certificate names it, unless `identities` gives another common name: each
    replica of a Pull agent calls as the one agent, `agent-<cluster>`, that its cluster has.
    """
    authority = Authority(directory, "flotilla-ca", ca_cert, ca_key)
    groups, services = groups or {}, services or {}
    issued = {}
    for name in processes:
        mine = groups.get(name, ())
        if name in services:
            hosts = [*LOOPBACK, *(service_server_name(service) for service in services[name])]
            issued[name] = authority.issue(name, name, hosts, server=True, client=False, groups=mine)
            issued[name + CLIENT_SUFFIX] = authority.issue(name + CLIENT_SUFFIX, (identities or {}).get(name, name), [],
                                                           server=False, client=True, groups=mine)
        elif name in clients:
            issued[name] = authority.issue(name, name, [], server=False, client=True, groups=mine)
        else:
            issued[name] = authority.issue(name, name, list(LOOPBACK), groups=mine)
    issued["admin"] = authority.issue("admin", "admin", [], server=False, client=True, groups=[MASTERS])
    return issued


def process_env(files: TLSFiles | None, etcd: bool = True, etcd_files: TLSFiles | None = None) -> dict[str, str]:
    """The variables that make a process use `files` for gRPC (and `etcd_files`, by default the
    same, for etcd)."""
    if files is None:
        return {}
    env = {ENV_CA: files.ca, ENV_CERT: files.cert, ENV_KEY: files.key}
    if etcd:
        client = etcd_files or files
        env.update({ENV_ETCD_CA: client.ca, ENV_ETCD_CERT: client.cert, ENV_ETCD_KEY: client.key})
    return env
