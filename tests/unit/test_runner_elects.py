"""A service whose replicas all do the same work (the webhook) never campaigns, even when the
environment asks every service to (deploy/k8s sets FLOTILLA_LEADER_ELECT=true for all)."""

from __future__ import annotations

import pytest

from flotilla.runtime.service import Runner, build_parser
from services.taint_manager.__main__ import SPEC as TAINT_MANAGER
from services.webhook.__main__ import SPEC as WEBHOOK


@pytest.mark.parametrize(("spec", "elects"), [(WEBHOOK, False), (TAINT_MANAGER, True)],
                         ids=["webhook", "taint_manager"])
def test_leader_election_is_the_services_to_have(spec: object, elects: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOTILLA_LEADER_ELECT", "true")
    args = build_parser(spec).parse_args(["--etcd-endpoints", "http://127.0.0.1:1"])  # type: ignore[arg-type]
    assert args.leader_elect is True
    assert Runner(spec, args).elects is elects  # type: ignore[arg-type]
