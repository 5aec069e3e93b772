"""Keeps each cluster's taints in line with its conditions and the ClusterTaintPolicies.

One compare-and-swap per pass, made on a fresh read; a cluster that is
unhealthy but not yet for --failover-eviction-timeout is looked at again
exactly when its NoExecute taint falls due.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from opentelemetry import trace

from flotilla.aio.clock import Clock
from flotilla.api import registry
from flotilla.api.conditions import TRUE, get_condition
from flotilla.api.v1 import cluster_pb2, policy_pb2
from flotilla.api.wellknown import TRACEPARENT_ANNOTATION
from flotilla.runtime.controller import Result
from flotilla.runtime.tracecontext import context_from, failover_attributes
from flotilla.store import NotFound, ObjectStore
from flotilla.store.events import EventRecorder
from flotilla.store.informer import Informer
from services.taint_manager.condition_taints import apply_plan, plan_condition_taints
from services.taint_manager.taint_policy import apply_policies
from services.taint_manager.taint_times import TaintTimes

log = logging.getLogger(__name__)
_tracer = trace.get_tracer("flotilla.taint_manager")


@dataclass(frozen=True)
class TaintConfig:
    failover_gate: bool = True
    eviction_timeout: timedelta = timedelta(minutes=5)


def describe_taints(cluster: cluster_pb2.Cluster) -> str:
    if not cluster.spec.taints:
        return "cluster now does not have taints"
    parts = [
        f"{{Key:{t.key},Value:{t.value},Effect:{t.effect}}}" if t.value else f"{{Key:{t.key},Effect:{t.effect}}}"
        for t in cluster.spec.taints
    ]
    return f"cluster now has taints([{','.join(parts)}])"


class ClusterTaintReconciler:
    def __init__(self, store: ObjectStore, clock: Clock, clusters: Informer[cluster_pb2.Cluster],
                 policies: Informer[policy_pb2.ClusterTaintPolicy], config: TaintConfig,
                 events: EventRecorder | None = None, times: TaintTimes | None = None) -> None:
        self.store = store
        self.clock = clock
        self.clusters = clusters
        self.policies = policies
        self.config = config
        self.events = events
        self.times = times or TaintTimes()
        # Per cluster: the failover trace on it, and the taints already given a span in it.
        self._traced: dict[str, tuple[str, set[tuple[str, str]]]] = {}

    def _trace_taints(self, cluster: cluster_pb2.Cluster) -> None:
        """Each taint added since the cluster left Ready gets a span in the failover trace stamped on
        it, once. Looked at on every pass, not only when a taint is written: the first taint can be
        written before the status service has stamped the trace."""
        name = cluster.metadata.name
        stamp = cluster.metadata.annotations.get(TRACEPARENT_ANNOTATION, "")
        parent = context_from(cluster.metadata.annotations)
        # Not cluster_ready: a span is for a taint added since the lastTransitionTime of Ready.
        ready = get_condition(cluster.status.conditions, "Ready")
        if parent is None or ready is None or ready.status == TRUE:
            return
        if self._traced.get(name, ("", set()))[0] != stamp:
            self._traced[name] = (stamp, set())
        done = self._traced[name][1]
        since = ready.last_transition_time.seconds
        for taint in cluster.spec.taints:
            if (taint.key, taint.effect) in done or taint.time_added.seconds < since:
                continue
            done.add((taint.key, taint.effect))
            at = self.times.added_ns(name, taint)
            span = _tracer.start_span("cluster.taint", context=parent, start_time=at, attributes={
                **failover_attributes("taint", cluster=name, reason=f"{taint.key}:{taint.effect}"),
                "flotilla.taint.effect": taint.effect,
            })
            span.end(end_time=at)

    def auto_no_execute(self) -> bool:
        # With any ClusterTaintPolicy, policies decide NoExecute taints, as in Karmada >= v1.14.
        return (self.config.failover_gate and self.config.eviction_timeout > timedelta(0)
                and not self.policies.list())

    async def reconcile(self, key: str) -> Result | None:
        cluster = self.clusters.get(key)
        if cluster is None:
            return None
        # A ClusterTaintPolicy stored but never readable decides taints too (without any policy,
        # the timeout's NoExecute taint is automatic): the cluster waits for it to read.
        self.policies.check_complete()
        now = self.clock.now()
        auto = self.auto_no_execute()
        policies = self.policies.list() if self.config.failover_gate else []
        plan = plan_condition_taints(cluster, now, self.config.eviction_timeout, auto)

        def change(obj: cluster_pb2.Cluster) -> bool:
            fresh_plan = plan_condition_taints(obj, now, self.config.eviction_timeout, auto)
            changed = apply_plan(obj.spec.taints, fresh_plan, now)
            return apply_policies(obj.spec.taints, obj, policies, now) or changed

        probe = cluster_pb2.Cluster()
        probe.CopyFrom(cluster)
        if change(probe):
            try:
                written = await self.store.mutate(registry.CLUSTER, "", cluster.metadata.name, change)
            except NotFound:
                return None
            before = {(t.key, t.effect) for t in cluster.spec.taints}
            for taint in written.spec.taints:
                # Added by this write: stamped `now` (timeAdded keeps its seconds).
                if (taint.key, taint.effect) not in before and taint.time_added.seconds == int(now.timestamp()):
                    self.times.record(written.metadata.name, taint, now)
            self.times.keep_only(written.metadata.name, written.spec.taints)
            log.info("event=taint cluster=%s taints=%s", key, describe_taints(written))
            if self.events is not None:
                await self.events.normal(written, "TaintClusterSucceed",
                                         f"Taint cluster succeed: {describe_taints(written)}.")
            cluster = written
        self._trace_taints(cluster)
        if plan.recheck_at is not None:
            return Result(requeue_after=max((plan.recheck_at - now).total_seconds(), 0.0))
        return None

