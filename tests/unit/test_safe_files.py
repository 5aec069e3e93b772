"""Key files are written so that nothing already on disk decides where the bytes go or who may
read them (flotilla.security.tls.write_file, used for CA and leaf keys, certificates, encryption
key files and the context): a fresh temporary name (O_EXCL|O_NOFOLLOW), the mode set before the
first byte, a rename over the target."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from flotilla.security import context as ctx
from flotilla.security import tls
from flotilla.security.crypto import EncryptionKeys, new_key_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_private_file_is_0600_even_over_a_0644_one_and_under_a_lax_umask(tmp_path: Path) -> None:
    key = tmp_path / "ca.key"
    key.write_bytes(b"old")
    key.chmod(0o644)
    before = os.umask(0)
    try:
        tls.write_file(key, b"secret", private=True)
    finally:
        os.umask(before)
    assert key.read_bytes() == b"secret"
    assert mode(key) == 0o600


def test_a_public_file_is_0644_whatever_the_umask(tmp_path: Path) -> None:
    cert = tmp_path / "ca.crt"
    before = os.umask(0o077)
    try:
        tls.write_file(cert, b"pem")
    finally:
        os.umask(before)
    assert mode(cert) == 0o644


def test_a_symlink_at_the_target_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    victim.chmod(0o644)
    key = tmp_path / "ca.key"
    key.symlink_to(victim)
    tls.write_file(key, b"secret", private=True)
    assert victim.read_bytes() == b"untouched" and mode(victim) == 0o644
    assert not key.is_symlink() and key.read_bytes() == b"secret" and mode(key) == 0o600


def test_what_was_left_under_the_old_fixed_temporary_name_is_not_reused(tmp_path: Path) -> None:
    """The writer before this one wrote `.<name>.tmp` with O_TRUNC: a world-readable file there kept
    its mode (so ca.key became 0644), and a symlink there was written through."""
    stale = tmp_path / ".ca.key.tmp"
    stale.write_bytes(b"")
    stale.chmod(0o644)
    tls.write_file(tmp_path / "ca.key", b"secret", private=True)
    assert mode(tmp_path / "ca.key") == 0o600

    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    link = tmp_path / ".ca.crt.tmp"
    link.symlink_to(victim)
    tls.write_file(tmp_path / "ca.crt", b"pem")
    assert victim.read_bytes() == b"untouched" and (tmp_path / "ca.crt").read_bytes() == b"pem"


@pytest.fixture
def predictable_names(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The temporary names' random suffixes, in order, as the test lays them out."""
    suffixes = ["planted", "planted", "fresh"]
    monkeypatch.setattr("flotilla.security.tls.secrets.token_hex", lambda n: suffixes.pop(0))
    yield suffixes


def test_a_file_or_symlink_at_the_temporary_name_is_never_opened(tmp_path: Path,
                                                                 predictable_names: list[str]) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    # What the old writer reused: a world-readable file, and a symlink, under the temporary name.
    (tmp_path / ".ca.key.planted.tmp").symlink_to(victim)
    tls.write_file(tmp_path / "ca.key", b"secret", private=True)
    assert victim.read_bytes() == b"untouched"
    assert (tmp_path / "ca.key").read_bytes() == b"secret" and mode(tmp_path / "ca.key") == 0o600
    # The planted link is left alone, and nothing else is left behind.
    assert (tmp_path / ".ca.key.planted.tmp").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ca.key.planted.tmp", "ca.key", "victim"]
    assert predictable_names == []


def test_no_free_temporary_name_is_an_error_not_a_reuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flotilla.security.tls.secrets.token_hex", lambda n: "same")
    planted = tmp_path / ".ca.key.same.tmp"
    planted.write_bytes(b"someone else's")
    with pytest.raises(FileExistsError, match="no free temporary name"):
        tls.write_file(tmp_path / "ca.key", b"secret", private=True)
    assert planted.read_bytes() == b"someone else's"
    assert not (tmp_path / "ca.key").exists()


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "ca.key"
    target.write_bytes(b"old")

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("flotilla.security.tls.os.replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        tls.write_file(target, b"new", private=True)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["ca.key"]


def test_key_files_certificates_and_the_context_use_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each writer, over a world-readable file left where it writes.
    pki = tmp_path / "pki"
    pki.mkdir()
    for path in (tmp_path / "keys.yaml", pki / "admin.key", pki / "admin.crt", tmp_path / "context.json"):
        path.write_text("old")
        path.chmod(0o666)
    new_key_file(tmp_path / "keys.yaml")
    assert mode(tmp_path / "keys.yaml") == 0o600
    assert EncryptionKeys.load(tmp_path / "keys.yaml").current == "key1"
    authority = tls.Authority(pki, "ca")
    assert mode(pki / "ca.key") == 0o600 and mode(pki / "ca.crt") == 0o644
    files = authority.issue("admin", "admin", ["127.0.0.1"])
    assert mode(Path(files.key)) == 0o600 and mode(Path(files.cert)) == 0o644

    saved = ctx.Context(etcd_endpoints="https://127.0.0.1:1", data_dir=str(tmp_path)).save()
    assert mode(saved) == 0o644 and json.loads(saved.read_text())["etcd_endpoints"] == "https://127.0.0.1:1"
    pointer = tmp_path / "config" / "current"
    monkeypatch.setenv(ctx.ENV_CONFIG, str(pointer))
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    pointer.parent.mkdir()
    pointer.symlink_to(victim)
    ctx.set_current(tmp_path)
    assert victim.read_text() == "untouched" and pointer.read_text() == f"{tmp_path.resolve()}\n"
