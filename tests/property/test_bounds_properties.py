"""Numbers and names at admission, at random: any int64 tolerationSeconds and any kind string is
either admitted or refused with the field named, never raised on; and the taint manager decides
on any stored toleration without raising (values from before admission bounded them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from flotilla.api.bounds import MAX_SECONDS
from flotilla.api.v1 import meta_pb2
from flotilla.plane.benchmarks.hostile_documents import pure_admission, request_for
from services.taint_manager.tolerations import assess

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NOW = datetime(2026, 11, 27, tzinfo=UTC)


def policy(seconds: int, api_version: str = "apps/v1", kind: str = "Deployment") -> dict[str, object]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": api_version, "kind": kind}],
                     "placement": {"clusterTolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                                           "tolerationSeconds": seconds}]}}}


@given(INT64)
def test_any_toleration_is_admitted_within_the_bound_or_refused_by_name(seconds: int) -> None:
    review = pure_admission(request_for(policy(seconds)))
    named = [e for e in review.errors if e.path == "spec.placement.clusterTolerations[0].tolerationSeconds"]
    assert bool(named) is (abs(seconds) > MAX_SECONDS) or not review.allowed


@given(st.text(max_size=300), st.text(max_size=300))
def test_any_selector_kind_is_admitted_or_refused_by_name(api_version: str, kind: str) -> None:
    review = pure_admission(request_for(policy(300, api_version, kind)))
    for error in review.errors:
        assert error.path and error.reason


@given(INT64, st.integers(min_value=-10**9, max_value=10**9))
def test_the_taint_manager_decides_on_any_stored_toleration(seconds: int, added_ago: int) -> None:
    taint = meta_pb2.Taint(key="k", effect="NoExecute")
    taint.time_added.FromDatetime(NOW - timedelta(seconds=added_ago))
    assess([taint], [meta_pb2.Toleration(key="k", operator="Exists", effect="NoExecute", toleration_seconds=seconds)],
           NOW)
