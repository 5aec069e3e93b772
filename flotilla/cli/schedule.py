"""`flotillactl schedule -f FILE`, `explain rb NAME`, `whatif fail CLUSTER…`: the scheduler's
decisions, offline or from the live scheduler.

`schedule` runs the scheduler's own code (`flotilla.scheduler`) on the file, with no
etcd; `explain` and `whatif` ask the running scheduler over gRPC, which runs the same code
against the live clusters.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from flotilla.api import codec, registry
from flotilla.api.errors import UserError
from flotilla.api.v1 import cluster_pb2, meta_pb2, policy_pb2, scheduler_pb2, scheduler_pb2_grpc, work_pb2
from flotilla.cli.connection import open_store, service_channel
from flotilla.cli.documents import read_documents
from flotilla.cli.table import table
from flotilla.store.base import StoreBase, meta_of
from flotilla.store.endpoints import list_endpoints

R = TypeVar("R")
Binding = work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding
# What a schedule file may hold: Clusters, and a binding or a workload (a template) and its policy.
ScheduleObject = (cluster_pb2.Cluster | work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding
                  | policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy | meta_pb2.Unstructured)
TIMEOUT = 60.0
OUTPUTS = ("json",)
# How `explain` words the scheduler's reading of docs/karmada-rules.md §8.1 for a binding.
TRIGGER_TEXT = {
    "None": "none: the scheduler leaves the binding as it is until it or its clusters change",
    "NotHandled": "none: another scheduler's binding, scheduling suspended, or no policy claims it",
}


# -- reading a schedule file -----------------------------------------------------------


def binding_from_documents(objects: Sequence[Message]) -> Binding:
    """The binding to schedule: the one in the file, or one built from its workload and policy."""
    from flotilla.rules.binding_builder import build_binding
    from flotilla.rules.resource_selection import selects

    bindings = [o for o in objects if isinstance(o, work_pb2.ResourceBinding | work_pb2.ClusterResourceBinding)]
    policies = [o for o in objects if isinstance(o, policy_pb2.PropagationPolicy | policy_pb2.ClusterPropagationPolicy)]
    templates = [o for o in objects if isinstance(o, meta_pb2.Unstructured)]
    if bindings:
        if len(bindings) > 1 or policies or templates:
            raise UserError("the file must hold one ResourceBinding, or one workload and its PropagationPolicy, "
                           "besides the Cluster objects")
        return bindings[0]
    if len(templates) != 1 or len(policies) != 1:
        raise UserError("the file must hold one ResourceBinding, or one workload and its PropagationPolicy, "
                       f"besides the Cluster objects (found {len(templates)} workload(s), {len(policies)} policies)")
    template, policy = templates[0], policies[0]
    if not template.metadata.namespace and registry.for_kind(template.api_version, template.kind).namespaced:
        template.metadata.namespace = policy.metadata.namespace or "default"
    if not selects(policy, template):
        raise UserError(f"{policy.kind} {policy.metadata.name} does not select {template.kind} "
                       f"{template.metadata.namespace}/{template.metadata.name}")
    return build_binding(template, policy)


def parse_objects(paths: list[str]) -> list[ScheduleObject]:
    objects: list[ScheduleObject] = []
    for doc in read_documents(paths):
        obj = codec.from_dict(doc)
        if not isinstance(obj, ScheduleObject):
            # from_dict checked that kind is a string, and set it on obj.
            raise UserError(f"{doc['kind']} {meta_of(obj).name}: only Clusters, a binding, or a workload and its "
                           "policy belong in a schedule file")
        objects.append(obj)
    return objects


# -- printing decisions ----------------------------------------------------------------


def decision_json(decision: scheduler_pb2.ScheduleDecision, live: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "clusters": [{"name": t.name, "replicas": t.replicas} for t in decision.clusters],
        "filtered": [{"cluster": f.cluster, "plugin": f.plugin, "reason": f.reason} for f in decision.filtered],
        "error": decision.error or None,
        "reason": decision.reason,
    }
    if decision.affinity_name:
        out["affinityName"] = decision.affinity_name
    if live:
        out["current"] = [{"name": t.name, "replicas": t.replicas} for t in decision.current]
        out["trigger"] = decision.trigger
    return out


def _targets(targets: Sequence[work_pb2.TargetCluster], workload: bool = True) -> str:
    if not targets:
        return "<none>"
    return ", ".join(f"{t.name}:{t.replicas}" if workload else t.name for t in targets)


def decision_text(decision: scheduler_pb2.ScheduleDecision, live: bool = False) -> str:
    workload = decision.workload
    lines = []
    if live:
        lines.append(f"Current:  {_targets(decision.current, workload)}")
        lines.append(f"Trigger:  {TRIGGER_TEXT.get(decision.trigger, decision.trigger)}")
    if decision.affinity_name:
        lines.append(f"Affinity: {decision.affinity_name}")
    if decision.error:
        lines.append(f"Not scheduled ({decision.reason}): {decision.error}")
    if decision.clusters:
        if lines:
            lines.append("")
        rows = [[t.name, str(t.replicas) if workload else "-"] for t in decision.clusters]
        lines.append(table(["CLUSTER", "REPLICAS"], rows))
    if decision.filtered:
        lines.append("")
        rows = [[f.cluster, f.plugin, f.reason] for f in decision.filtered]
        lines.append(table(["FILTERED OUT", "PLUGIN", "REASON"], rows))
    return "\n".join(lines)


def print_decision(decision: scheduler_pb2.ScheduleDecision, output: str | None, live: bool = False) -> None:
    if output == "json":
        print(json.dumps(decision_json(decision, live), indent=2))
    else:
        print(decision_text(decision, live))


# -- schedule --------------------------------------------------------------------------


async def cmd_schedule(args: argparse.Namespace) -> int:
    # The scheduler's code is only loaded by the commands that run it.
    from flotilla.scheduler import core
    from flotilla.scheduler.framework import Framework
    from flotilla.scheduler.messages import decision_message

    objects = parse_objects(args.filename)
    clusters = [o for o in objects if isinstance(o, cluster_pb2.Cluster)]
    binding = binding_from_documents(objects)
    snapshot = core.Snapshot.of(clusters, datetime.now(UTC))
    decision = core.schedule(binding, snapshot, Framework.build(args.plugins))
    print_decision(decision_message(binding, decision), args.output)
    return 0


# -- the live scheduler ----------------------------------------------------------------


Method = Callable[[scheduler_pb2_grpc.SchedulerStub], Callable[..., Awaitable[R]]]


async def call_scheduler(store: StoreBase, method: Method[R], request: object) -> R:
    """One RPC, trying each registered scheduler replica until one answers."""
    found = await list_endpoints(store, "scheduler")
    if not found:
        raise UserError(f"no scheduler service is registered in etcd at {store.endpoints} (is `flotilla up` running?)")
    tried = []
    for endpoint in found:
        async with service_channel(endpoint, "scheduler") as channel:
            try:
                return await method(scheduler_pb2_grpc.SchedulerStub(channel))(request, timeout=TIMEOUT)
            except grpc.aio.AioRpcError as e:
                if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise UserError(e.details() or e.code().name) from e
                tried.append(endpoint.address)
    raise UserError(f"cannot reach the scheduler at {', '.join(tried)}")


async def cmd_explain(args: argparse.Namespace) -> int:
    rt = registry.lookup(args.kind)
    if rt not in (registry.RESOURCE_BINDING, registry.CLUSTER_RESOURCE_BINDING):
        raise UserError(f'explain takes rb (resourcebinding) or crb (clusterresourcebinding), not "{args.kind}"')
    namespace = (args.namespace or "default") if rt.namespaced else ""
    request = scheduler_pb2.ExplainRequest(kind=rt.kind, namespace=namespace, name=args.name)
    async with open_store(args) as store:
        decision = await call_scheduler(store, lambda s: s.Explain, request)
    print_decision(decision, args.output, live=True)
    return 0


def whatif_json(report: scheduler_pb2.WhatIfReport) -> dict[str, Any]:
    def targets(items: Sequence[work_pb2.TargetCluster]) -> list[dict[str, Any]]:
        return [{"name": t.name, "replicas": t.replicas} for t in items]

    return {
        "failed": list(report.failed_clusters),
        "bindings": [
            {"kind": b.kind, "namespace": b.namespace, "name": b.name, "before": targets(b.before),
             "after": targets(b.after), "error": b.error or None, "reason": b.reason}
            for b in report.bindings
        ],
        "unplaced": [_binding_name(b) for b in report.bindings if b.error],
        "unaffected": report.unaffected,
    }


def _binding_name(b: scheduler_pb2.BindingForecast) -> str:
    short = "rb" if b.kind == "ResourceBinding" else "crb"
    return f"{short}/{b.namespace}/{b.name}" if b.namespace else f"{short}/{b.name}"


def whatif_text(report: scheduler_pb2.WhatIfReport) -> str:
    lines = [f"If {', '.join(report.failed_clusters)} failed now:"]
    if report.bindings:
        rows = [[_binding_name(b), _targets(b.before), _targets(b.after) if not b.error else "-",
                 "moved" if not b.error else b.reason] for b in report.bindings]
        lines.append(table(["BINDING", "BEFORE", "AFTER", "RESULT"], rows))
    else:
        lines.append("no binding runs there.")
    unplaced = [b for b in report.bindings if b.error]
    if unplaced:
        lines.append("")
        lines.append(f"{len(unplaced)} binding(s) could not be placed:")
        lines.extend(f"  {_binding_name(b)}: {b.error}" for b in unplaced)
    lines.append(f"{report.unaffected} other binding(s) unaffected.")
    return "\n".join(lines)


async def cmd_whatif(args: argparse.Namespace) -> int:
    request = scheduler_pb2.WhatIfRequest(clusters=args.clusters)
    async with open_store(args) as store:
        report = await call_scheduler(store, lambda s: s.WhatIf, request)
    if args.output == "json":
        print(json.dumps(whatif_json(report), indent=2))
    else:
        print(whatif_text(report))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("schedule", help="where the scheduler would place a binding, offline (no etcd needed)")
    p.add_argument("-f", "--filename", action="append", required=True,
                   help="YAML with Clusters and a ResourceBinding, or a workload and its policy (- for stdin)")
    p.add_argument("-o", "--output", choices=OUTPUTS)
    p.add_argument("--plugins", default="*", help="scheduler plugins, as the scheduler's --plugins flag")
    p.set_defaults(run=cmd_schedule)

    p = sub.add_parser("explain", help="the live scheduler's decision for a binding, and why")
    p.add_argument("kind", metavar="KIND", help="rb or crb")
    p.add_argument("name", metavar="NAME")
    p.add_argument("-n", "--namespace", default=None)
    p.add_argument("-o", "--output", choices=OUTPUTS)
    p.set_defaults(run=cmd_explain)

    p = sub.add_parser("whatif", help="where every binding would go if clusters failed now")
    p.add_argument("action", choices=["fail"])
    p.add_argument("clusters", metavar="CLUSTER", nargs="+")
    p.add_argument("-o", "--output", choices=OUTPUTS)
    p.set_defaults(run=cmd_whatif)
