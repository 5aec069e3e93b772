"""Hostile numbers and names at admission: every `...Seconds` field bounded (a tolerationSeconds
of 3e11 once made every reconcile of its binding raise), an apiVersion and a kind spelled as
Kubernetes spells them before any informer is started for them, and a forecast (WhatIf) computed
one at a time, off the event loop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import grpc
import pytest

from flotilla.aio.clock import FakeClock
from flotilla.api import codec
from flotilla.api.bounds import MAX_SECONDS, clamp_seconds
from flotilla.api.v1 import meta_pb2, scheduler_pb2, scheduler_pb2_grpc
from flotilla.scheduler.framework import Framework
from flotilla.store import MemoryStore
from services.scheduler.reconciler import SchedulerOptions
from services.scheduler.servicer import SchedulerServicer
from services.taint_manager.tolerations import NEVER, assess
from services.webhook.defaulting import AdmissionConfig, default_object
from services.webhook.rules.kinds import api_version_problem, kind_problem
from services.webhook.validation import validate_object


def policy(toleration_seconds: int, api_version: str = "apps/v1", kind: str = "Deployment") -> dict[str, object]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": api_version, "kind": kind}],
                     "placement": {"clusterAffinity": {"clusterNames": ["member1"]},
                                   "clusterTolerations": [{"key": "cluster.karmada.io/not-ready",
                                                           "operator": "Exists", "effect": "NoExecute",
                                                           "tolerationSeconds": toleration_seconds}]}}}


def problems(doc: dict[str, object]) -> list[str]:
    obj = codec.from_dict(doc)
    config = AdmissionConfig()
    default_object(obj, None, config, datetime(2026, 11, 27, tzinfo=UTC))
    return [f"{e.path}: {e.reason}" for e in validate_object(obj, None, config)]


@pytest.mark.parametrize(("seconds", "refused"), [
    (300, False), (MAX_SECONDS, False), (-MAX_SECONDS, False), (MAX_SECONDS + 1, True), (300_000_000_000, True),
    (-300_000_000_000, True),
])
def test_every_seconds_field_is_bounded(seconds: int, refused: bool) -> None:
    found = [p for p in problems(policy(seconds)) if "tolerationSeconds" in p]
    assert bool(found) is refused, found
    if refused:
        assert found[0].startswith("spec.placement.clusterTolerations[0].tolerationSeconds: invalid value")


def test_a_stored_toleration_beyond_the_bound_does_not_overflow() -> None:
    """Written before admission bounded it: the taint manager clamps it rather than raise."""
    now = datetime(2026, 11, 27, tzinfo=UTC)
    taint = meta_pb2.Taint(key="cluster.karmada.io/not-ready", effect="NoExecute")
    taint.time_added.FromDatetime(now)
    toleration = meta_pb2.Toleration(key=taint.key, operator="Exists", effect="NoExecute",
                                     toleration_seconds=300_000_000_000)
    verdict = assess([taint], [toleration], now)
    assert verdict.when != NEVER and verdict.at is not None
    assert clamp_seconds(10**15) == MAX_SECONDS


@pytest.mark.parametrize(("api_version", "ok"), [
    ("v1", True), ("apps/v1", True), ("example.com/v1beta1", True), ("flink.apache.org/v1beta1", True),
    ("", True),  # required: said by the template's own rule
    ("Apps/v1", False), ("apps/V1", False), ("apps/v1/x", False), ("/v1", False), ("a b/v1", False),
    ("apps/" + "v" * 64, False), ("x" * 254 + "/v1", False), ("apps/1", False),
])
def test_api_versions(api_version: str, ok: bool) -> None:
    assert (api_version_problem(api_version) == "") is ok


@pytest.mark.parametrize(("kind", "ok"), [
    ("Deployment", True), ("FlinkDeployment", True), ("My-Kind", True), ("", True),
    ("Foo Bar", False), ("1Kind", False), ("Kind!", False), ("K" * 64, False), ("Kind-", False),
])
def test_kinds(kind: str, ok: bool) -> None:
    assert (kind_problem(kind) == "") is ok


def test_a_template_of_a_kind_not_spelled_as_one_is_refused() -> None:
    found = problems({"apiVersion": "example.com/v1", "kind": "Foo Bar", "metadata": {"name": "x", "namespace": "d"}})
    assert found and found[0].startswith("kind: invalid value")


def test_a_policy_selecting_a_kind_not_spelled_as_one_is_refused() -> None:
    found = problems(policy(300, kind="x" * 5000))
    assert any(p.startswith("spec.resourceSelectors[0].kind: invalid value") for p in found), found
    assert any(p.startswith("spec.resourceSelectors[0].apiVersion")
               for p in problems(policy(300, api_version="Apps/v1")))


async def test_one_forecast_at_a_time() -> None:
    servicer = SchedulerServicer(MemoryStore(), FakeClock(), Framework.build(""), SchedulerOptions())
    server = grpc.aio.server()
    scheduler_pb2_grpc.add_SchedulerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = scheduler_pb2_grpc.SchedulerStub(channel)
            async with servicer._forecasting:  # a forecast under way
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.WhatIf(scheduler_pb2.WhatIfRequest(clusters=["member1"]), timeout=10)
                assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # Done: the next one is computed (and refused for its own reason: no such cluster).
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await stub.WhatIf(scheduler_pb2.WhatIfRequest(clusters=["member1"]), timeout=10)
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await server.stop(None)
        await asyncio.sleep(0)
