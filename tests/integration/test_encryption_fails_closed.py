"""Encryption at rest fails closed (issue 35 a), against a real etcd:

- a process with no encryption key refuses to write a Secret or a Work, naming the flag, unless
  plaintext is allowed on purpose (--allow-plaintext-secrets), which it then says in its log;
- a plaintext Secret or Work is refused on read, naming the remedy, unless the migration flag
  (--accept-plaintext-secrets) says otherwise; `secrets rewrite` reads it anyway and encrypts it;
- what cannot be opened (plaintext refused, a key this process lacks) is unknown, never gone: a
  list names it, an informer reports it unreadable and keeps its last good version;
- Works are sealed like Secrets (every Work: the cost is AES-GCM's microseconds per write), so a
  Secret propagated in one is not plaintext in etcd, and `flotillactl` prints it redacted.

The session's key file (tests/conftest.py) is in FLOTILLA_ENCRYPTION_KEY_FILE; a test that needs
"no key" builds its store without one, or removes the variable and the current context."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from flotilla.api import codec, registry
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.plane.local_plane import seal_plaintext
from flotilla.security.context import ENV_CONFIG
from flotilla.security.crypto import (
    ENV_ACCEPT_PLAINTEXT,
    ENV_ALLOW_PLAINTEXT,
    ENV_KEY_FILE,
    PREFIX,
    EncryptionKeys,
    Key,
    configured_keys,
)
from flotilla.store import Informer, Store, StoreError, Undecodable
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.objects import UNOPENED, Unopenable, unopened_reason
from tests.conftest import CtlResult, Security
from tests.integration.test_store_contract import Recorder, running

pytestmark = pytest.mark.integration

SECRET = registry.for_kind("v1", "Secret")
TOKEN = "t0k3n-never-in-plaintext"
B64_TOKEN = base64.b64encode(TOKEN.encode()).decode()
NAMESPACE = "karmada-es-member1"


def secret(name: str, n: str = "") -> meta_pb2.Unstructured:
    made = codec.from_dict({"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": name, "namespace": "default", "annotations": {"n": n}},
                            "data": {"token": B64_TOKEN}})
    assert isinstance(made, meta_pb2.Unstructured)
    return made


def work(name: str) -> work_pb2.Work:
    carried = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "default"},
               "data": {"token": B64_TOKEN}}
    made = codec.from_dict({"apiVersion": registry.WORK_API, "kind": "Work",
                            "metadata": {"name": name, "namespace": NAMESPACE},
                            "spec": {"workload": {"manifests": [carried]}}})
    assert isinstance(made, work_pb2.Work)
    return made


def secret_key(name: str) -> str:
    return f"/flotilla/secrets/default/{name}"


def work_key(name: str) -> str:
    return f"/flotilla/works/{NAMESPACE}/{name}"


def plaintext_in(value: bytes) -> bool:
    return TOKEN.encode() in value or B64_TOKEN.encode() in value


async def raw(store: Store, key: str) -> bytes:
    got = await store.client.get(key.encode())
    assert got is not None, key
    return bytes(got.value)


async def revision(store: Store, key: str) -> int:
    got = await store.client.get(key.encode())
    assert got is not None, key
    return int(got.mod_revision)


def without_key(store: Store, *, allow_plaintext: bool = False, accept_plaintext: bool = False) -> Store:
    return Store(store.client, endpoints=store.endpoints, allow_plaintext=allow_plaintext,
                 accept_plaintext=accept_plaintext)


# -- writes ----------------------------------------------------------------------------------


async def test_without_a_key_secrets_and_works_are_not_written(store: Store) -> None:
    bare = without_key(store)
    for obj, key in ((secret("a"), secret_key("a")), (work("w"), work_key("w"))):
        with pytest.raises(StoreError) as refused:
            await bare.create(obj)
        message = str(refused.value)
        assert key in message and "--encryption-key-file" in message and ENV_KEY_FILE in message
        assert "--allow-plaintext-secrets" in message
        assert await store.client.get(key.encode()) is None
    # Other kinds are no business of encryption.
    config = codec.from_dict({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "c", "namespace": "default"}})
    assert isinstance(config, meta_pb2.Unstructured)
    assert (await bare.create(config)).metadata.name == "c"


async def test_a_process_with_no_key_file_configured_refuses(store: Store, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """No flag, no FLOTILLA_ENCRYPTION_KEY_FILE, no current context: what a service started
    without its key file, or a tool on another machine, gets."""
    monkeypatch.delenv(ENV_KEY_FILE)
    monkeypatch.setenv(ENV_CONFIG, str(tmp_path / "no-current-context"))
    assert configured_keys() is None
    unconfigured = await Store.connect(store.endpoints)
    try:
        assert unconfigured.keys is None
        with pytest.raises(StoreError, match="--encryption-key-file"):
            await unconfigured.create(secret("a"))
        # The variable a plane without encryption on purpose sets for every process.
        monkeypatch.setenv(ENV_ALLOW_PLAINTEXT, "true")
        allowed = await Store.connect(store.endpoints)
        try:
            await allowed.create(secret("a"))
        finally:
            await allowed.close()
    finally:
        await unconfigured.close()
    assert plaintext_in(await raw(store, secret_key("a")))


async def test_allowed_plaintext_is_written_read_back_and_said(store: Store,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    plain = without_key(store, allow_plaintext=True)
    with caplog.at_level(logging.WARNING, logger="flotilla.store.objects"):
        await plain.create(secret("a"))
        await plain.create(secret("b"))
    assert [r.getMessage() for r in caplog.records if "plaintext-at-rest" in r.getMessage()] != []
    assert len([r for r in caplog.records if "plaintext-at-rest" in r.getMessage()]) == 1  # once, not per write
    assert plaintext_in(await raw(store, secret_key("a")))
    # Its own plaintext it reads back; a plane with keys does not.
    assert (await plain.get(SECRET, "default", "a")).metadata.name == "a"
    with pytest.raises(Unopenable):
        await store.get(SECRET, "default", "a")


# -- reads -----------------------------------------------------------------------------------


async def test_plaintext_is_refused_read_in_the_migration_window_and_rewritten(store: Store,
                                                                               monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:
    assert store.keys is not None
    plain = without_key(store, allow_plaintext=True)
    await plain.create(secret("a"))
    await plain.create(work("w"))
    await store.create(secret("sealed"))

    for rt, name, key in ((SECRET, "a", secret_key("a")), (registry.WORK, "w", work_key("w"))):
        with pytest.raises(Unopenable) as refused:
            await store.get(rt, "default" if rt is SECRET else NAMESPACE, name)
        message = str(refused.value)
        assert key in message and "plaintext" in message
        assert "flotillactl secrets rewrite" in message and "--accept-plaintext-secrets" in message
        assert isinstance(refused.value, Undecodable)  # unknown, not corrupt, not gone
    # A list names it and goes on with the rest.
    listed = await store.list(SECRET, "default")
    assert [s.metadata.name for s in listed.items] == ["sealed"] and listed.undecodable == [secret_key("a")]
    # A delete does not take it for corrupt (which it would remove outright, finalizers unread).
    with pytest.raises(Unopenable):
        await store.delete(SECRET, "default", "a")

    # The migration window: the flag (or its variable) reads plaintext as it is.
    migrating = Store(store.client, endpoints=store.endpoints, keys=store.keys, accept_plaintext=True)
    assert (await migrating.get(SECRET, "default", "a")).content == secret("a").content
    monkeypatch.setenv(ENV_ACCEPT_PLAINTEXT, "1")
    from_env = Store(store.client, endpoints=store.endpoints, keys=store.keys)
    assert len((await from_env.list(SECRET, "default")).items) == 2

    # `secrets rewrite` reads plaintext on purpose, and encrypts Secrets and Works alike.
    assert await store.rewrite_secrets() == (2, 3)
    for key in (secret_key("a"), work_key("w")):
        value = await raw(store, key)
        assert value.startswith(PREFIX + store.keys.current.encode() + b":") and not plaintext_in(value)
    assert (await store.get(SECRET, "default", "a")).content == secret("a").content
    assert len((await store.get(registry.WORK, NAMESPACE, "w")).spec.workload.manifests) == 1


async def test_a_key_this_process_lacks_or_no_key_is_named(store: Store) -> None:
    other = Store(store.client, endpoints=store.endpoints, keys=EncryptionKeys([Key("elsewhere", os.urandom(32))]))
    await other.create(secret("a"))
    with pytest.raises(Unopenable, match="encrypted with key 'elsewhere'"):
        await store.get(SECRET, "default", "a")
    with pytest.raises(Unopenable, match="no encryption key file"):
        await without_key(store, allow_plaintext=True, accept_plaintext=True).get(SECRET, "default", "a")
    # A rewrite cannot encrypt what it cannot read: it stops and says which.
    with pytest.raises(Unopenable, match="elsewhere"):
        await store.rewrite_secrets()


async def test_a_list_or_a_watch_hands_on_a_marker_that_decodes_as_nothing(store: Store) -> None:
    plain = without_key(store, allow_plaintext=True)
    await plain.create(secret("a"))
    kvs, _ = await store.kv_range("/flotilla/secrets/default/")
    [kv] = kvs
    assert kv.value.startswith(UNOPENED)
    reason = unopened_reason(kv.value)
    assert reason is not None and "plaintext" in reason and secret_key("a") in reason
    assert unopened_reason(b"anything else") is None
    with pytest.raises(Undecodable):
        store.decode(SECRET, kv.value, kv.mod_revision, kv.key)


# -- informers: unknown, never gone ----------------------------------------------------------


async def test_an_informer_reports_an_unopenable_secret_unreadable_not_deleted(store: Store, compact: bool) -> None:
    plain = without_key(store, allow_plaintext=True)
    other = Store(store.client, endpoints=store.endpoints, keys=EncryptionKeys([Key("elsewhere", os.urandom(32))]))
    await store.create(secret("good", n="1"))
    await plain.create(secret("never-readable"))  # plaintext before the list
    reported: list[tuple[str, str]] = []

    async def on_undecodable(key: str, error: str) -> None:
        reported.append((key, error))

    informer = Informer(store, SECRET, on_undecodable=on_undecodable, compact=compact)
    rec = Recorder()
    informer.add_handler(rec)
    async with running(informer):
        await rec.wait_for(1)
        assert informer.keys() == ["default/good"]
        # Stored but not openable here: unknown, so no caller takes it for absent.
        with pytest.raises(Undecodable):
            informer.get("default/never-readable")
        assert informer.unknown() == ["default/never-readable"]
        assert [k for k, _ in reported] == [secret_key("never-readable")]

        # A plaintext value over a good one mid-watch: no DELETED, the last good version stays,
        # and the report says why (plaintext refused), not "does not decode".
        current = await store.get(SECRET, "default", "good")
        assert await plain.kv_put_if(secret_key("good"), secret("good", n="plain").SerializeToString(),
                                     int(current.metadata.resource_version), None)
        await store.create(secret("after", n="1"))
        await rec.wait_for(2)
        assert rec.seen == [("ADDED", "good", "1"), ("ADDED", "after", "1")]
        kept = informer.get("default/good")
        assert kept is not None and kept.metadata.annotations["n"] == "1"
        assert informer.unreadable()["default/good"] == secret_key("good")
        assert "plaintext" in reported[-1][1] and "secrets rewrite" in reported[-1][1]

        # Sealed with a key this process lacks: the same.
        assert await other.kv_put_if(secret_key("after"), secret("after", n="other").SerializeToString(),
                                     await revision(store, secret_key("after")), None)
        await store.create(secret("last", n="1"))
        await rec.wait_for(3)
        assert rec.seen[2] == ("ADDED", "last", "1")
        kept = informer.get("default/after")
        assert kept is not None and kept.metadata.annotations["n"] == "1"
        assert "elsewhere" in reported[-1][1]

        # Written again, encrypted (by a process in the migration window): MODIFIED, readable.
        migrating = Store(store.client, endpoints=store.endpoints, keys=store.keys, accept_plaintext=True)
        current = await migrating.get(SECRET, "default", "good")
        current.metadata.annotations["n"] = "2"
        await migrating.update(current)
        await rec.wait_for(4)
        assert rec.seen[3] == ("MODIFIED", "good", "2")
        assert "default/good" not in informer.unreadable()
    assert not any(kind == "DELETED" for kind, _, _ in rec.seen)


@pytest.fixture(params=[False, True], ids=["decoded", "compact"])
def compact(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


# -- Works -----------------------------------------------------------------------------------


async def test_a_work_carrying_a_secret_is_sealed_in_etcd(store: Store) -> None:
    assert store.keys is not None
    created = await store.create(work("w"))
    value = await raw(store, work_key("w"))
    assert value.startswith(PREFIX + store.keys.current.encode() + b":") and not plaintext_in(value)
    created.metadata.labels["x"] = "y"
    updated = await store.update(created)
    value = await raw(store, work_key("w"))
    assert value.startswith(PREFIX) and not plaintext_in(value)
    read = await store.get(registry.WORK, NAMESPACE, "w")
    assert read == updated and B64_TOKEN.encode() in read.spec.workload.manifests[0]
    # A value moved under another Work's key does not open there.
    await store.client.put(work_key("moved").encode(), value)
    with pytest.raises(Unopenable, match="does not decrypt"):
        await store.get(registry.WORK, NAMESPACE, "moved")


def test_flotillactl_prints_a_carried_secret_redacted(clean_etcd: EmbeddedEtcd,
                                                      ctl: Callable[..., CtlResult]) -> None:
    async def create() -> None:
        store = await Store.connect(clean_etcd.endpoint)
        try:
            await store.create(work("w"))
        finally:
            await store.close()

    asyncio.run(create())
    for output in ("yaml", "json"):
        shown = ctl("get", "works", "-n", NAMESPACE, "-o", output)
        assert shown.code == 0, shown.err
        assert B64_TOKEN not in shown.out and "<redacted: 24 bytes>" in shown.out
    one = json.loads(ctl("get", "work", "w", "-n", NAMESPACE, "-o", "json").out)
    assert one["spec"]["workload"]["manifests"][0]["data"] == {"token": "<redacted: 24 bytes>"}
    described = ctl("describe", "work", "w", "-n", NAMESPACE)
    assert described.code == 0, described.err
    assert B64_TOKEN not in described.out and "<redacted: 24 bytes>" in described.out


async def test_flotilla_up_seals_what_an_older_version_left_in_plaintext(store: Store, security: Security) -> None:
    """`flotilla up` over an older data dir: Secrets and Works written in plaintext are sealed
    before any service starts, since the services refuse plaintext."""
    plain = without_key(store, allow_plaintext=True)
    await plain.create(secret("older"))
    await plain.create(work("older"))
    assert await seal_plaintext(store.endpoints, security.client, security.key_file) >= 2
    for key in (secret_key("older"), work_key("older")):
        assert not plaintext_in(await raw(store, key))
    assert len((await store.get(registry.WORK, NAMESPACE, "older")).spec.workload.manifests) == 1
