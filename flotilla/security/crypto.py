"""Encryption at rest of Secrets (member credentials among them) and of Works (which carry the
Secrets they propagate), the way Kubernetes' `aesgcm` provider does it.

A key file lists keys; the first encrypts, every one decrypts:

    keys:
      - name: key2
        secret: <base64 of 32 random bytes>
      - name: key1
        secret: <base64 of 32 random bytes>

A stored value is `flotilla:enc:aesgcm:v1:<key name>:` + 12-byte nonce + AES-GCM ciphertext, with
the etcd key as authenticated data (a value copied under another key does not decrypt). To
rotate: put a new key first in every process's file and restart them, rewrite every Secret and
Work (`flotillactl secrets rewrite` re-encrypts with the first key), then drop the old key.

It fails closed (flotilla.store.objects applies these rules):
- A process with no key file refuses to write a Secret or a Work, unless the plane runs without
  encryption on purpose: `--allow-plaintext-secrets` (FLOTILLA_ALLOW_PLAINTEXT_SECRETS), which
  such a process also needs to read back what it wrote.
- A value without the prefix (plaintext: written before encryption was turned on, by a process
  allowed to, or put in etcd by something else) is refused on read, so that nobody with write
  access to etcd downgrades a Secret to one the plane takes as its own. For the window in which
  `flotillactl secrets rewrite` encrypts what is already stored, `--accept-plaintext-secrets`
  (FLOTILLA_ACCEPT_PLAINTEXT_SECRETS) reads plaintext as it is; the rewrite itself always does.

The file comes from `--encryption-key-file`, else FLOTILLA_ENCRYPTION_KEY_FILE, else (for
tools) the current context's, which `flotilla up` makes in its data dir (`--insecure` too: it
drops TLS, not encryption at rest).
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from flotilla.security.tls import write_file

ENV_KEY_FILE = "FLOTILLA_ENCRYPTION_KEY_FILE"
KEY_FILE_FLAG = "--encryption-key-file"
# A plane run without encryption on purpose: Secrets and Works are written (and read) as plaintext.
ALLOW_PLAINTEXT_FLAG = "--allow-plaintext-secrets"
ENV_ALLOW_PLAINTEXT = "FLOTILLA_ALLOW_PLAINTEXT_SECRETS"
# The migration window: plaintext read as it is until `flotillactl secrets rewrite` has encrypted it.
ACCEPT_PLAINTEXT_FLAG = "--accept-plaintext-secrets"
ENV_ACCEPT_PLAINTEXT = "FLOTILLA_ACCEPT_PLAINTEXT_SECRETS"
PREFIX = b"flotilla:enc:aesgcm:v1:"
_NONCE = 12
_KEY_SIZES = (16, 24, 32)


class EncryptionError(ValueError):
    """A key file that cannot be used, or a stored value that cannot be decrypted."""


@dataclass(frozen=True)
class Key:
    name: str
    secret: bytes


class EncryptionKeys:
    def __init__(self, keys: list[Key], source: str = "") -> None:
        if not keys:
            raise EncryptionError(f"{source or 'encryption keys'}: keys: at least one key is needed")
        self.keys = keys
        self.source = source
        self._by_name = {k.name: AESGCM(k.secret) for k in keys}

    @property
    def current(self) -> str:
        return self.keys[0].name

    @classmethod
    def load(cls, path: str | Path) -> EncryptionKeys:
        try:
            raw = yaml.safe_load(Path(path).read_text())
        except OSError as e:
            raise EncryptionError(f"encryption key file {path}: {e.strerror or e}") from e
        except yaml.YAMLError as e:
            raise EncryptionError(f"encryption key file {path}: not YAML ({e})") from e
        return cls(parse_keys(raw, str(path)), str(path))

    def encrypt(self, plaintext: bytes, context: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        sealed = self._by_name[self.current].encrypt(nonce, plaintext, context)
        return PREFIX + self.current.encode() + b":" + nonce + sealed

    def decrypt(self, stored: bytes, context: bytes) -> bytes:
        """The plaintext of a value `encrypt` made; EncryptionError for anything else, plaintext
        included: whether plaintext may be read is the caller's decision (`is_encrypted`), never a
        silent fallback here."""
        if not is_encrypted(stored):
            raise EncryptionError(f"{context.decode(errors='replace')} is not encrypted")
        name, sep, rest = stored[len(PREFIX):].partition(b":")
        aead = self._by_name.get(name.decode(errors="replace"))
        if not sep or aead is None:
            raise EncryptionError(f"{context.decode(errors='replace')} is encrypted with key "
                                  f"{name.decode(errors='replace')!r}, which {self.source or 'the key file'} lacks")
        try:
            return aead.decrypt(rest[:_NONCE], rest[_NONCE:], context)
        except InvalidTag as e:
            raise EncryptionError(f"{context.decode(errors='replace')} does not decrypt with key "
                                  f"{name.decode()!r} (a different key of that name?)") from e

    def is_current(self, stored: bytes) -> bool:
        return stored.startswith(PREFIX + self.current.encode() + b":")


def is_encrypted(stored: bytes) -> bool:
    """Whether a stored value is one `EncryptionKeys.encrypt` made (with whichever key)."""
    return stored.startswith(PREFIX)


def env_flag(name: str) -> bool:
    """A yes/no environment variable, read as flotilla.runtime.flags reads a boolean flag's."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def parse_keys(raw: object, source: str) -> list[Key]:
    """The keys of a parsed key file; an error naming the field otherwise."""
    if not isinstance(raw, dict) or not isinstance(raw.get("keys"), list):
        raise EncryptionError(f"{source}: keys: must be a list of {{name, secret}}")
    keys: list[Key] = []
    for i, item in enumerate(raw["keys"]):
        where = f"{source}: keys[{i}]"
        if not isinstance(item, dict):
            raise EncryptionError(f"{where}: must be a mapping with name and secret")
        name, secret = item.get("name"), item.get("secret")
        if not isinstance(name, str) or not name or ":" in name:
            raise EncryptionError(f"{where}.name: must be a non-empty string without ':'")
        if any(k.name == name for k in keys):
            raise EncryptionError(f"{where}.name: {name!r} is used twice")
        try:
            decoded = base64.b64decode(secret, validate=True) if isinstance(secret, str) else b""
        except binascii.Error:
            decoded = b""
        if len(decoded) not in _KEY_SIZES:
            raise EncryptionError(f"{where}.secret: must be base64 of 16, 24 or 32 bytes")
        keys.append(Key(name, decoded))
    return keys


def new_key_file(path: Path, name: str = "key1") -> Path:
    """A key file with one fresh 256-bit key (readable by its owner only)."""
    secret = base64.b64encode(secrets.token_bytes(32)).decode()
    write_file(path, yaml.safe_dump({"keys": [{"name": name, "secret": secret}]}).encode(), private=True)
    return path


def configured_keys(explicit: str | None = None) -> EncryptionKeys | None:
    """The flag's file, else FLOTILLA_ENCRYPTION_KEY_FILE's, else the current context's; None
    when none is configured (a store then refuses to write Secrets and Works, unless plaintext is
    allowed on purpose: ALLOW_PLAINTEXT_FLAG)."""
    path = explicit or os.environ.get(ENV_KEY_FILE) or _context_key_file()
    return EncryptionKeys.load(path) if path else None


def _context_key_file() -> str:
    from flotilla.security.context import ContextError, current_context

    try:
        context = current_context()
    except ContextError:
        return ""
    return context.encryption_key_file if context else ""
