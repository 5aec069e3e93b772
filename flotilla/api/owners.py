"""Who writes each field of a binding (ResourceBinding and ClusterResourceBinding alike).

Every top-level field of `spec` and `status` (conditions by type), and every annotation that
carries protocol between the services, has one owner: the service whose rule decides it. What
another service contributes to it goes through a named function of that rule (the owner calls
it too, or it applies the owner's rule, said in `why`), so a rule is never written twice. A
field with no owner (`owner=None`) is written by several services through one function that
every writer calls.

This is data, read by two tests: tests/unit/test_binding_owners_memory.py runs a failover with
each service's reconcilers on a store tagged with the service's name and fails when a service
changes a field this table does not let it write; tests/unit/test_binding_owners_table.py
checks that every function named here exists and that docs/architecture.md's "Who writes
what" is `markdown()`.
"""

from __future__ import annotations

from dataclasses import dataclass

WEBHOOK, STATUS, TAINT_MANAGER, SCHEDULER, EXECUTOR, EVICTION = (
    "webhook", "status", "taint_manager", "scheduler", "executor", "eviction")
SERVICES = (WEBHOOK, STATUS, TAINT_MANAGER, SCHEDULER, EXECUTOR, EVICTION)
# A field no service writes: only a user's document, admitted by the webhook, sets it.
USER = "user"


@dataclass(frozen=True)
class Writer:
    service: str
    # Dotted names of the functions its write of the field goes through.
    via: tuple[str, ...]


@dataclass(frozen=True)
class Field:
    # As in the API's JSON: `spec.clusters`, `status.conditions[Scheduled]`,
    # `metadata.annotations[policy.karmada.io/applied-placement]`.
    name: str
    # A service, USER, or None: no owner, every writer calls `rule`.
    owner: str | None
    # The functions that compute the field, the owner's (or, without one, every writer's).
    rule: tuple[str, ...]
    why: str
    others: tuple[Writer, ...] = ()

    def writers(self) -> frozenset[str]:
        """Every service allowed to change the field."""
        owner = {self.owner} if self.owner is not None else set()
        return frozenset(owner | {w.service for w in self.others})


def annotation(key: str) -> str:
    return f"metadata.annotations[{key}]"


def condition(type_: str) -> str:
    return f"status.conditions[{type_}]"


_BUILD = "flotilla.rules.binding_builder.build_binding"
_MERGE = "services.executor.detector.merge_binding"
_POLICY_WHY = ("the template and the policy that claims it decide it (Karmada's detector); the "
               "detector sets it on creation and on every policy or template change")
_EVICT = "flotilla.rules.eviction_tasks.graceful_evict_cluster"
_APP_EVICT = "services.eviction.application.evict"
_FAIL_BACK = "services.eviction.failback.fail_back"
_REFRESH = "flotilla.rules.failover_history.refresh"
_RECORD_CARRY = "flotilla.scheduler.task_drop.record_carry"
_CARRY_AGGREGATION = "flotilla.rules.aggregated_status.carry_aggregation"
_SCHEDULE = "services.scheduler.reconciler.BindingScheduler._status_change"
_OBSERVE = "flotilla.scheduler.observed.observe"
_CARRY_SCHEDULED = "flotilla.scheduler.observed.carry_scheduled"
_TASK_DROP_OBSERVED = Writer(EVICTION, (_RECORD_CARRY, _OBSERVE))
_TASK_DROP_SCHEDULED = Writer(EVICTION, (_RECORD_CARRY, _CARRY_SCHEDULED))
_TASK_DROP_EXECUTOR = Writer(EVICTION, (_CARRY_AGGREGATION,))
_TASK_DROP_WHY = ("; the task drop writes it in its own write, when `carry_after_drop` finds the scheduler's "
                  "next pass would write nothing else (by the scheduler's own rule, `flotilla.scheduler.observed`; "
                  "one write per evicted binding fewer)")
_CARRY_WHY = ("; the task drop writes the aggregation without the dropped cluster's item when it was "
              "current (`carry_aggregation` judges it with `expected_clusters` and `set_fully_applied`, "
              "which `aggregate_into` calls too; one write per evicted binding fewer)")

FIELDS: tuple[Field, ...] = (
    # -- spec ------------------------------------------------------------------------------
    *(Field(f"spec.{name}", EXECUTOR, (_BUILD, _MERGE), _POLICY_WHY) for name in (
        "propagateDeps", "replicaRequirements", "replicas", "components", "placement", "schedulerName", "failover",
        "conflictResolution", "preserveResourcesOnDeletion", "schedulePriority")),
    Field("spec.resource", EXECUTOR, (_BUILD, _MERGE, "services.executor.dependencies.attach"),
          "the template it binds (the dependencies distributor's attached bindings: the dependent)"),
    Field("spec.suspension", EXECUTOR, (_BUILD, _MERGE),
          "dispatching suspension is the policy's; scheduling suspension only a user sets, and the detector "
          "keeps it"),
    Field("spec.requiredBy", EXECUTOR, ("services.executor.dependencies.attach",
                                        "services.executor.dependencies.detach"),
          "the dependencies distributor: which workloads need this dependent, and where they run"),
    Field("spec.clusters", SCHEDULER, ("flotilla.scheduler.core.schedule",),
          "the placement is the scheduler's decision; an eviction takes its cluster out in the same edit that "
          "makes the graceful eviction task (Karmada's GracefulEvictCluster, one compare-and-swap), and failback "
          "puts back the placement the failover record kept, one the scheduler keeps (its replicas still add "
          "up: `need_schedule` triggers nothing)",
          (Writer(TAINT_MANAGER, (_EVICT, "flotilla.rules.eviction_tasks.remove_cluster")),
           Writer(EVICTION, (_APP_EVICT, _FAIL_BACK)))),
    Field("spec.gracefulEvictionTasks", EVICTION, ("services.eviction.assessment.assess", _APP_EVICT, _FAIL_BACK),
          "the graceful eviction controller keeps or drops each task; the taint manager's NoExecute eviction "
          "adds one through the same edit as the application failover's",
          (Writer(TAINT_MANAGER, (_EVICT,)),)),
    Field("spec.activeEvictionHistory", EVICTION, (_APP_EVICT,),
          "application failover's blockPredecessorSeconds"),
    Field("spec.rescheduleTriggeredAt", EXECUTOR, ("services.executor.rebalancer.RebalancerReconciler._trigger",),
          "a WorkloadRebalancer's manual reschedule: its creationTimestamp, which the scheduler reads as a "
          "request to schedule afresh"),
    *(Field(f"spec.{name}", USER, (), "a user's document; no service writes it") for name in (
        "workloadAffinityGroups",)),
    # -- status ----------------------------------------------------------------------------
    Field("status.schedulerObservedGeneration", SCHEDULER, (_SCHEDULE, _OBSERVE),
          "which generation the scheduler has decided" + _TASK_DROP_WHY, (_TASK_DROP_OBSERVED,)),
    Field("status.schedulerObservingAffinityName", SCHEDULER, (_SCHEDULE,),
          "the clusterAffinities term the placement uses"),
    Field("status.lastScheduledTime", SCHEDULER, (_SCHEDULE,),
          "when the scheduler last placed the binding (the executor aggregates only scheduled bindings)"),
    Field(condition("Scheduled"), SCHEDULER, (_SCHEDULE,),
          "the scheduler's last decision, for the generation it was made" + _TASK_DROP_WHY,
          (_TASK_DROP_SCHEDULED,)),
    Field("status.aggregatedStatus", EXECUTOR, ("services.executor.binding_status.aggregate_into",),
          "the Works' statuses, which only the executor reads" + _CARRY_WHY, (_TASK_DROP_EXECUTOR,)),
    Field(condition("FullyApplied"), EXECUTOR, ("flotilla.rules.aggregated_status.set_fully_applied",),
          "judged on aggregatedStatus, for the generation it was aggregated for" + _CARRY_WHY,
          (_TASK_DROP_EXECUTOR,)),
    Field(condition("DirectlyPurgePending"), EXECUTOR, ("services.executor.binding_controller.BindingReconciler"
                                                        "._report_pending",),
          "the binding controller holds the new Works until a Directly task's old Work is gone"),
    Field(condition("StatePreservationFailed"), EXECUTOR, ("flotilla.rules.preserved_labels.set_failed_condition",
                                                           "services.executor.binding_controller.BindingReconciler"
                                                           "._report_pending"),
          "the binding controller builds the new Works without a preserved label that is no valid label, "
          "and says which"),
    Field(condition("EvictionBlocked"), EVICTION, ("services.eviction.graceful.GracefulEvictionReconciler"
                                                   "._report_blocked",),
          "the graceful eviction controller keeps a task whose replicas could be placed nowhere"),
    Field("status.applicationUnhealthySince", EVICTION, ("services.eviction.application.decide",),
          "application failover's timers, kept across restarts"),
    Field("status.failoverHistory", EVICTION, (_REFRESH,),
          "the eviction service's history controller keeps it (and is the backstop); each step of a failover "
          "brings it up to date in the write it makes anyway (the eviction adds the record, the placement its "
          "destinations, the task drop its recovery), all through `refresh`, so it costs no write of its own",
          (Writer(TAINT_MANAGER, (_REFRESH,)), Writer(SCHEDULER, (_REFRESH,)))),
    # -- annotations that carry protocol between the services ---------------------------------
    Field(annotation("policy.karmada.io/applied-placement"), SCHEDULER,
          ("flotilla.scheduler.need_schedule.applied_placement",),
          "the placement the current spec.clusters was decided on (a placement change reschedules)"),
    *(Field(annotation(key), EXECUTOR, (_BUILD, "services.executor.policy_match.without_claim"),
            "the claim of the policy that made the binding (the detector)") for key in (
        "propagationpolicy.karmada.io/name", "propagationpolicy.karmada.io/namespace",
        "clusterpropagationpolicy.karmada.io/name")),
    Field(annotation("flotilla.io/traceparent"), None, ("flotilla.runtime.tracecontext.traceparent",),
          "the failover's trace: each step that acts on the binding stamps its own span, for the next step to "
          "continue (an eviction, a reschedule, an application failover)",
          (Writer(TAINT_MANAGER, ("flotilla.runtime.tracecontext.traceparent",)),
           Writer(SCHEDULER, ("flotilla.runtime.tracecontext.traceparent",)),
           Writer(EVICTION, ("flotilla.runtime.tracecontext.traceparent",)))),
)

BY_NAME = {f.name: f for f in FIELDS}


def markdown() -> str:
    """The table of docs/architecture.md's "Who writes what": one row per run of fields with the
    same owner, rule, other writers and reason."""
    rows = ["| field | owner (its rule) | others, through | why |", "|---|---|---|---|"]
    groups: list[list[Field]] = []
    for f in FIELDS:
        if groups and _same(groups[-1][0], f):
            groups[-1].append(f)
        else:
            groups.append([f])
    for group in groups:
        f = group[0]
        names = ", ".join(f"`{g.name}`" for g in group)
        owner = f"**{f.owner}**" if f.owner is not None else "none: every writer calls"
        rule = ", ".join(f"`{r}`" for r in f.rule)
        others = "; ".join(f"{w.service}: " + ", ".join(f"`{v}`" for v in w.via) for w in f.others)
        rows.append(f"| {names} | {owner}{' (' + rule + ')' if rule else ''} | {others or '—'} | {f.why} |")
    return "\n".join(rows) + "\n"


def _same(a: Field, b: Field) -> bool:
    return (a.owner, a.rule, a.why, a.others) == (b.owner, b.rule, b.why, b.others)
