"""Encryption at rest of Secrets: sealing, rotation as Kubernetes does it (first key encrypts,
every key decrypts, a rewrite moves a value to the first key), and key files that cannot be used."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from flotilla.security.crypto import (
    PREFIX,
    EncryptionError,
    EncryptionKeys,
    Key,
    configured_keys,
    is_encrypted,
    new_key_file,
    parse_keys,
)

K1 = Key("key1", b"1" * 32)
K2 = Key("key2", b"2" * 32)
K3 = Key("key3", b"3" * 16)
ETCD_KEY = b"/flotilla/secrets/karmada-cluster/member1"
TOKEN = b"a-member-token-never-stored-in-plaintext"


def test_a_sealed_value_names_its_key_and_holds_no_plaintext() -> None:
    keys = EncryptionKeys([K1])
    sealed = keys.encrypt(TOKEN, ETCD_KEY)
    assert sealed.startswith(PREFIX + b"key1:")
    assert TOKEN not in sealed and base64.b64encode(TOKEN) not in sealed
    assert keys.decrypt(sealed, ETCD_KEY) == TOKEN
    # A fresh nonce each time: equal plaintexts do not look equal at rest.
    assert keys.encrypt(TOKEN, ETCD_KEY) != sealed


# Rotation, step by step: which key file reads a value sealed under which one.
@pytest.mark.parametrize(("written_with", "read_with", "readable"), [
    ([K1], [K1], True),
    ([K1], [K2, K1], True),       # the new key is added first: old values still read
    ([K2, K1], [K2, K1], True),
    ([K2, K1], [K2], True),       # written after the rotation: sealed under key2
    ([K1], [K2], False),          # the old key dropped before a rewrite: unreadable
    ([K1], [K3, K2], False),
    ([K3], [K1, K3], True),       # 128-bit keys too
])
def test_rotation(written_with: list[Key], read_with: list[Key], readable: bool) -> None:
    sealed = EncryptionKeys(written_with).encrypt(TOKEN, ETCD_KEY)
    reader = EncryptionKeys(read_with)
    if readable:
        assert reader.decrypt(sealed, ETCD_KEY) == TOKEN
    else:
        with pytest.raises(EncryptionError, match=f"key '{written_with[0].name}'"):
            reader.decrypt(sealed, ETCD_KEY)


@pytest.mark.parametrize(("written_with", "current", "is_current"), [
    ([K1], [K1], True),
    ([K1], [K2, K1], False),      # what `flotillactl secrets rewrite` re-encrypts
    ([K2, K1], [K2, K1], True),
])
def test_a_rewrite_is_needed_for_values_under_an_older_key(written_with: list[Key], current: list[Key],
                                                           is_current: bool) -> None:
    sealed = EncryptionKeys(written_with).encrypt(TOKEN, ETCD_KEY)
    assert EncryptionKeys(current).is_current(sealed) is is_current


def test_plaintext_is_not_decrypted_as_is_and_needs_a_rewrite() -> None:
    """Whether plaintext may be read is the store's decision (fail closed, flotilla.store.objects):
    decrypting never passes it through silently."""
    keys = EncryptionKeys([K1])
    with pytest.raises(EncryptionError, match="is not encrypted"):
        keys.decrypt(b'{"data":{}}', ETCD_KEY)
    assert not is_encrypted(b'{"data":{}}') and is_encrypted(keys.encrypt(b"x", ETCD_KEY))
    assert not keys.is_current(b'{"data":{}}')


def test_a_value_moved_under_another_etcd_key_does_not_decrypt() -> None:
    keys = EncryptionKeys([K1])
    sealed = keys.encrypt(TOKEN, ETCD_KEY)
    with pytest.raises(EncryptionError, match="does not decrypt"):
        keys.decrypt(sealed, b"/flotilla/secrets/default/other")


def test_a_different_key_under_the_same_name_does_not_decrypt() -> None:
    sealed = EncryptionKeys([K1]).encrypt(TOKEN, ETCD_KEY)
    with pytest.raises(EncryptionError, match="does not decrypt"):
        EncryptionKeys([Key("key1", b"9" * 32)]).decrypt(sealed, ETCD_KEY)


GOOD = base64.b64encode(b"k" * 32).decode()


@pytest.mark.parametrize(("raw", "message"), [
    (None, "keys: must be a list"),
    ({"keys": "key1"}, "keys: must be a list"),
    ({"keys": []}, "keys: at least one key"),
    ({"keys": ["key1"]}, r"keys\[0\]: must be a mapping"),
    ({"keys": [{"secret": GOOD}]}, r"keys\[0\]\.name: must be a non-empty string"),
    ({"keys": [{"name": "a:b", "secret": GOOD}]}, r"keys\[0\]\.name: must be a non-empty string without ':'"),
    ({"keys": [{"name": "k", "secret": GOOD}, {"name": "k", "secret": GOOD}]}, r"keys\[1\]\.name: 'k' is used twice"),
    ({"keys": [{"name": "k", "secret": "not base64!"}]}, r"keys\[0\]\.secret: must be base64 of 16, 24 or 32"),
    ({"keys": [{"name": "k", "secret": base64.b64encode(b"short").decode()}]}, r"keys\[0\]\.secret: must be base64"),
    ({"keys": [{"name": "k", "secret": 42}]}, r"keys\[0\]\.secret: must be base64"),
])
def test_an_unusable_key_file_names_the_field(raw: object, message: str) -> None:
    with pytest.raises(EncryptionError, match=message) as e:
        EncryptionKeys(parse_keys(raw, "keys.yaml"), "keys.yaml")
    assert str(e.value).startswith("keys.yaml")
    assert "\n" not in str(e.value)


def test_a_new_key_file_is_private_and_loads(tmp_path: Path) -> None:
    path = new_key_file(tmp_path / "keys.yaml")
    assert path.stat().st_mode & 0o077 == 0
    keys = EncryptionKeys.load(path)
    assert keys.current == "key1"
    assert keys.decrypt(keys.encrypt(TOKEN, ETCD_KEY), ETCD_KEY) == TOKEN


def test_missing_key_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(EncryptionError, match=f"encryption key file {tmp_path / 'nope.yaml'}: "):
        configured_keys(str(tmp_path / "nope.yaml"))
