"""A Secret carried by a Work prints redacted, as a Secret itself does: `flotillactl get works -o
yaml|json` and `describe work` show its data and stringData values as `<redacted: N bytes>`.

Karmada prints a Work as it is and kubectl a Secret's data as base64; the Work is not the Secret's
home, so its copy of the values is never printed. Every other manifest prints as it is."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml

from flotilla.api import codec, registry
from flotilla.api.v1 import work_pb2
from flotilla.cli import get
from flotilla.cli.describe import describe

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PASSWORD = "aHVudGVyMg=="  # base64 of "hunter2"
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
          "data": {"mode": "fast"}}


def work_with_a_secret() -> work_pb2.Work:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "default"},
              "type": "Opaque", "data": {"password": PASSWORD}, "stringData": {"user": "admin-user"}}
    work = codec.from_dict({
        "apiVersion": registry.WORK_API, "kind": "Work",
        "metadata": {"name": "default.db", "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [secret, CONFIG]}},
    })
    assert isinstance(work, work_pb2.Work)
    return work


def shown(output: str, single: bool = True) -> str:
    return get.render(registry.WORK, [work_with_a_secret()], output, NOW, single=single, all_namespaces=False)


def manifests(document: dict[str, Any]) -> list[dict[str, Any]]:
    return list(document["spec"]["workload"]["manifests"])


def test_get_works_yaml_and_json_redact_a_carried_secret() -> None:
    for output, parse in (("yaml", yaml.safe_load), ("json", json.loads)):
        text = shown(output)
        assert PASSWORD not in text and "hunter2" not in text and "admin-user" not in text
        secret, config = manifests(parse(text))
        assert secret["data"] == {"password": "<redacted: 7 bytes>"}
        assert secret["stringData"] == {"user": "<redacted: 10 bytes>"}
        # Everything else about it, and every other manifest, as it is.
        assert secret["metadata"] == {"name": "db", "namespace": "default"} and secret["type"] == "Opaque"
        assert config == CONFIG
    # A list of Works too.
    listed = json.loads(shown("json", single=False))
    assert manifests(listed["items"][0])[0]["data"] == {"password": "<redacted: 7 bytes>"}


def test_describe_work_redacts_a_carried_secret() -> None:
    text = describe(registry.WORK, work_with_a_secret(), [], NOW)
    assert PASSWORD not in text and "admin-user" not in text
    assert "<redacted: 7 bytes>" in text and "<redacted: 10 bytes>" in text
    assert "fast" in text  # the ConfigMap's data is no secret


def test_the_work_printed_is_left_as_it_is() -> None:
    work = work_with_a_secret()
    before = work.SerializeToString()
    get.render(registry.WORK, [work], "yaml", NOW, single=True, all_namespaces=False)
    describe(registry.WORK, work, [], NOW)
    assert work.SerializeToString() == before
