from flotilla.api.v1 import core_pb2 as _core_pb2
from flotilla.api.v1 import meta_pb2 as _meta_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PropagationPolicy(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PropagationSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PropagationSpec, _Mapping]] = ...) -> None: ...

class ClusterPropagationPolicy(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: PropagationSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PropagationSpec, _Mapping]] = ...) -> None: ...

class PropagationSpec(_message.Message):
    __slots__ = ("resource_selectors", "association", "propagate_deps", "placement", "priority", "preemption", "dependent_overrides", "scheduler_name", "failover", "conflict_resolution", "activation_preference", "suspension", "preserve_resources_on_deletion", "schedule_priority")
    RESOURCE_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ASSOCIATION_FIELD_NUMBER: _ClassVar[int]
    PROPAGATE_DEPS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    DEPENDENT_OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    ACTIVATION_PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    SUSPENSION_FIELD_NUMBER: _ClassVar[int]
    PRESERVE_RESOURCES_ON_DELETION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    resource_selectors: _containers.RepeatedCompositeFieldContainer[ResourceSelector]
    association: bool
    propagate_deps: bool
    placement: Placement
    priority: int
    preemption: str
    dependent_overrides: _containers.RepeatedScalarFieldContainer[str]
    scheduler_name: str
    failover: FailoverBehavior
    conflict_resolution: str
    activation_preference: str
    suspension: Suspension
    preserve_resources_on_deletion: bool
    schedule_priority: SchedulePriority
    def __init__(self, resource_selectors: _Optional[_Iterable[_Union[ResourceSelector, _Mapping]]] = ..., association: _Optional[bool] = ..., propagate_deps: _Optional[bool] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ..., priority: _Optional[int] = ..., preemption: _Optional[str] = ..., dependent_overrides: _Optional[_Iterable[str]] = ..., scheduler_name: _Optional[str] = ..., failover: _Optional[_Union[FailoverBehavior, _Mapping]] = ..., conflict_resolution: _Optional[str] = ..., activation_preference: _Optional[str] = ..., suspension: _Optional[_Union[Suspension, _Mapping]] = ..., preserve_resources_on_deletion: _Optional[bool] = ..., schedule_priority: _Optional[_Union[SchedulePriority, _Mapping]] = ...) -> None: ...

class ResourceSelector(_message.Message):
    __slots__ = ("api_version", "kind", "namespace", "name", "label_selector")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    namespace: str
    name: str
    label_selector: _meta_pb2.LabelSelector
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., label_selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("cluster_affinity", "cluster_affinities", "cluster_tolerations", "spread_constraints", "replica_scheduling", "workload_affinity")
    CLUSTER_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_AFFINITIES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    SPREAD_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    cluster_affinity: ClusterAffinity
    cluster_affinities: _containers.RepeatedCompositeFieldContainer[ClusterAffinityTerm]
    cluster_tolerations: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Toleration]
    spread_constraints: _containers.RepeatedCompositeFieldContainer[SpreadConstraint]
    replica_scheduling: ReplicaSchedulingStrategy
    workload_affinity: WorkloadAffinity
    def __init__(self, cluster_affinity: _Optional[_Union[ClusterAffinity, _Mapping]] = ..., cluster_affinities: _Optional[_Iterable[_Union[ClusterAffinityTerm, _Mapping]]] = ..., cluster_tolerations: _Optional[_Iterable[_Union[_meta_pb2.Toleration, _Mapping]]] = ..., spread_constraints: _Optional[_Iterable[_Union[SpreadConstraint, _Mapping]]] = ..., replica_scheduling: _Optional[_Union[ReplicaSchedulingStrategy, _Mapping]] = ..., workload_affinity: _Optional[_Union[WorkloadAffinity, _Mapping]] = ...) -> None: ...

class ClusterAffinity(_message.Message):
    __slots__ = ("label_selector", "field_selector", "cluster_names", "exclude")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAMES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    label_selector: _meta_pb2.LabelSelector
    field_selector: FieldSelector
    cluster_names: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, label_selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., field_selector: _Optional[_Union[FieldSelector, _Mapping]] = ..., cluster_names: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ...) -> None: ...

class FieldSelector(_message.Message):
    __slots__ = ("match_expressions",)
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[_core_pb2.NodeSelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[_core_pb2.NodeSelectorRequirement, _Mapping]]] = ...) -> None: ...

class ClusterAffinityTerm(_message.Message):
    __slots__ = ("affinity_name", "label_selector", "field_selector", "cluster_names", "exclude", "overflow_affinities")
    AFFINITY_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAMES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_AFFINITIES_FIELD_NUMBER: _ClassVar[int]
    affinity_name: str
    label_selector: _meta_pb2.LabelSelector
    field_selector: FieldSelector
    cluster_names: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    overflow_affinities: _containers.RepeatedCompositeFieldContainer[OverflowClusterAffinity]
    def __init__(self, affinity_name: _Optional[str] = ..., label_selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., field_selector: _Optional[_Union[FieldSelector, _Mapping]] = ..., cluster_names: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ..., overflow_affinities: _Optional[_Iterable[_Union[OverflowClusterAffinity, _Mapping]]] = ...) -> None: ...

class OverflowClusterAffinity(_message.Message):
    __slots__ = ("affinity_name", "label_selector", "field_selector", "cluster_names", "exclude")
    AFFINITY_NAME_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_NAMES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    affinity_name: str
    label_selector: _meta_pb2.LabelSelector
    field_selector: FieldSelector
    cluster_names: _containers.RepeatedScalarFieldContainer[str]
    exclude: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, affinity_name: _Optional[str] = ..., label_selector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., field_selector: _Optional[_Union[FieldSelector, _Mapping]] = ..., cluster_names: _Optional[_Iterable[str]] = ..., exclude: _Optional[_Iterable[str]] = ...) -> None: ...

class SpreadConstraint(_message.Message):
    __slots__ = ("spread_by_field", "spread_by_label", "max_groups", "min_groups")
    SPREAD_BY_FIELD_FIELD_NUMBER: _ClassVar[int]
    SPREAD_BY_LABEL_FIELD_NUMBER: _ClassVar[int]
    MAX_GROUPS_FIELD_NUMBER: _ClassVar[int]
    MIN_GROUPS_FIELD_NUMBER: _ClassVar[int]
    spread_by_field: str
    spread_by_label: str
    max_groups: int
    min_groups: int
    def __init__(self, spread_by_field: _Optional[str] = ..., spread_by_label: _Optional[str] = ..., max_groups: _Optional[int] = ..., min_groups: _Optional[int] = ...) -> None: ...

class ReplicaSchedulingStrategy(_message.Message):
    __slots__ = ("replica_scheduling_type", "replica_division_preference", "weight_preference")
    REPLICA_SCHEDULING_TYPE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIVISION_PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    replica_scheduling_type: str
    replica_division_preference: str
    weight_preference: ClusterPreferences
    def __init__(self, replica_scheduling_type: _Optional[str] = ..., replica_division_preference: _Optional[str] = ..., weight_preference: _Optional[_Union[ClusterPreferences, _Mapping]] = ...) -> None: ...

class ClusterPreferences(_message.Message):
    __slots__ = ("static_weight_list", "dynamic_weight")
    STATIC_WEIGHT_LIST_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    static_weight_list: _containers.RepeatedCompositeFieldContainer[StaticClusterWeight]
    dynamic_weight: str
    def __init__(self, static_weight_list: _Optional[_Iterable[_Union[StaticClusterWeight, _Mapping]]] = ..., dynamic_weight: _Optional[str] = ...) -> None: ...

class StaticClusterWeight(_message.Message):
    __slots__ = ("target_cluster", "weight")
    TARGET_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    target_cluster: ClusterAffinity
    weight: int
    def __init__(self, target_cluster: _Optional[_Union[ClusterAffinity, _Mapping]] = ..., weight: _Optional[int] = ...) -> None: ...

class WorkloadAffinity(_message.Message):
    __slots__ = ("affinity", "anti_affinity")
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    affinity: WorkloadAffinityTerm
    anti_affinity: WorkloadAffinityTerm
    def __init__(self, affinity: _Optional[_Union[WorkloadAffinityTerm, _Mapping]] = ..., anti_affinity: _Optional[_Union[WorkloadAffinityTerm, _Mapping]] = ...) -> None: ...

class WorkloadAffinityTerm(_message.Message):
    __slots__ = ("group_by_label_key",)
    GROUP_BY_LABEL_KEY_FIELD_NUMBER: _ClassVar[int]
    group_by_label_key: str
    def __init__(self, group_by_label_key: _Optional[str] = ...) -> None: ...

class FailoverBehavior(_message.Message):
    __slots__ = ("application", "cluster")
    APPLICATION_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    application: ApplicationFailoverBehavior
    cluster: ClusterFailoverBehavior
    def __init__(self, application: _Optional[_Union[ApplicationFailoverBehavior, _Mapping]] = ..., cluster: _Optional[_Union[ClusterFailoverBehavior, _Mapping]] = ...) -> None: ...

class ApplicationFailoverBehavior(_message.Message):
    __slots__ = ("pre_conditions", "decision_conditions", "purge_mode", "grace_period_seconds", "block_predecessor_seconds", "state_preservation")
    PRE_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    PURGE_MODE_FIELD_NUMBER: _ClassVar[int]
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_PREDECESSOR_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STATE_PRESERVATION_FIELD_NUMBER: _ClassVar[int]
    pre_conditions: PreConditions
    decision_conditions: DecisionConditions
    purge_mode: str
    grace_period_seconds: int
    block_predecessor_seconds: int
    state_preservation: StatePreservation
    def __init__(self, pre_conditions: _Optional[_Union[PreConditions, _Mapping]] = ..., decision_conditions: _Optional[_Union[DecisionConditions, _Mapping]] = ..., purge_mode: _Optional[str] = ..., grace_period_seconds: _Optional[int] = ..., block_predecessor_seconds: _Optional[int] = ..., state_preservation: _Optional[_Union[StatePreservation, _Mapping]] = ...) -> None: ...

class PreConditions(_message.Message):
    __slots__ = ("delay_seconds", "healthy_state")
    DELAY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_STATE_FIELD_NUMBER: _ClassVar[int]
    delay_seconds: int
    healthy_state: str
    def __init__(self, delay_seconds: _Optional[int] = ..., healthy_state: _Optional[str] = ...) -> None: ...

class DecisionConditions(_message.Message):
    __slots__ = ("toleration_seconds",)
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    toleration_seconds: int
    def __init__(self, toleration_seconds: _Optional[int] = ...) -> None: ...

class ClusterFailoverBehavior(_message.Message):
    __slots__ = ("purge_mode", "state_preservation", "failback")
    PURGE_MODE_FIELD_NUMBER: _ClassVar[int]
    STATE_PRESERVATION_FIELD_NUMBER: _ClassVar[int]
    FAILBACK_FIELD_NUMBER: _ClassVar[int]
    purge_mode: str
    state_preservation: StatePreservation
    failback: Failback
    def __init__(self, purge_mode: _Optional[str] = ..., state_preservation: _Optional[_Union[StatePreservation, _Mapping]] = ..., failback: _Optional[_Union[Failback, _Mapping]] = ...) -> None: ...

class Failback(_message.Message):
    __slots__ = ("enabled", "stabilization_window_seconds", "max_concurrent")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    STABILIZATION_WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    stabilization_window_seconds: int
    max_concurrent: int
    def __init__(self, enabled: _Optional[bool] = ..., stabilization_window_seconds: _Optional[int] = ..., max_concurrent: _Optional[int] = ...) -> None: ...

class StatePreservation(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[StatePreservationRule]
    def __init__(self, rules: _Optional[_Iterable[_Union[StatePreservationRule, _Mapping]]] = ...) -> None: ...

class StatePreservationRule(_message.Message):
    __slots__ = ("alias_label_name", "json_path")
    ALIAS_LABEL_NAME_FIELD_NUMBER: _ClassVar[int]
    JSON_PATH_FIELD_NUMBER: _ClassVar[int]
    alias_label_name: str
    json_path: str
    def __init__(self, alias_label_name: _Optional[str] = ..., json_path: _Optional[str] = ...) -> None: ...

class Suspension(_message.Message):
    __slots__ = ("dispatching", "dispatching_on_clusters")
    DISPATCHING_FIELD_NUMBER: _ClassVar[int]
    DISPATCHING_ON_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    dispatching: bool
    dispatching_on_clusters: SuspendClusters
    def __init__(self, dispatching: _Optional[bool] = ..., dispatching_on_clusters: _Optional[_Union[SuspendClusters, _Mapping]] = ...) -> None: ...

class SuspendClusters(_message.Message):
    __slots__ = ("cluster_names",)
    CLUSTER_NAMES_FIELD_NUMBER: _ClassVar[int]
    cluster_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cluster_names: _Optional[_Iterable[str]] = ...) -> None: ...

class SchedulePriority(_message.Message):
    __slots__ = ("priority_class_source", "priority_class_name")
    PRIORITY_CLASS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    priority_class_source: str
    priority_class_name: str
    def __init__(self, priority_class_source: _Optional[str] = ..., priority_class_name: _Optional[str] = ...) -> None: ...

class ClusterTaintPolicy(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ClusterTaintPolicySpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ClusterTaintPolicySpec, _Mapping]] = ...) -> None: ...

class ClusterTaintPolicySpec(_message.Message):
    __slots__ = ("target_clusters", "add_on_conditions", "remove_on_conditions", "taints")
    TARGET_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    ADD_ON_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ON_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    target_clusters: ClusterAffinity
    add_on_conditions: _containers.RepeatedCompositeFieldContainer[MatchCondition]
    remove_on_conditions: _containers.RepeatedCompositeFieldContainer[MatchCondition]
    taints: _containers.RepeatedCompositeFieldContainer[PolicyTaint]
    def __init__(self, target_clusters: _Optional[_Union[ClusterAffinity, _Mapping]] = ..., add_on_conditions: _Optional[_Iterable[_Union[MatchCondition, _Mapping]]] = ..., remove_on_conditions: _Optional[_Iterable[_Union[MatchCondition, _Mapping]]] = ..., taints: _Optional[_Iterable[_Union[PolicyTaint, _Mapping]]] = ...) -> None: ...

class MatchCondition(_message.Message):
    __slots__ = ("condition_type", "operator", "status_values")
    CONDITION_TYPE_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    STATUS_VALUES_FIELD_NUMBER: _ClassVar[int]
    condition_type: str
    operator: str
    status_values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, condition_type: _Optional[str] = ..., operator: _Optional[str] = ..., status_values: _Optional[_Iterable[str]] = ...) -> None: ...

class PolicyTaint(_message.Message):
    __slots__ = ("key", "effect", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    effect: str
    value: str
    def __init__(self, key: _Optional[str] = ..., effect: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class OverridePolicy(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: OverrideSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[OverrideSpec, _Mapping]] = ...) -> None: ...

class ClusterOverridePolicy(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: OverrideSpec
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[OverrideSpec, _Mapping]] = ...) -> None: ...

class OverrideSpec(_message.Message):
    __slots__ = ("resource_selectors", "override_rules", "target_cluster", "overriders")
    RESOURCE_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_RULES_FIELD_NUMBER: _ClassVar[int]
    TARGET_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    OVERRIDERS_FIELD_NUMBER: _ClassVar[int]
    resource_selectors: _containers.RepeatedCompositeFieldContainer[ResourceSelector]
    override_rules: _containers.RepeatedCompositeFieldContainer[RuleWithCluster]
    target_cluster: ClusterAffinity
    overriders: Overriders
    def __init__(self, resource_selectors: _Optional[_Iterable[_Union[ResourceSelector, _Mapping]]] = ..., override_rules: _Optional[_Iterable[_Union[RuleWithCluster, _Mapping]]] = ..., target_cluster: _Optional[_Union[ClusterAffinity, _Mapping]] = ..., overriders: _Optional[_Union[Overriders, _Mapping]] = ...) -> None: ...

class RuleWithCluster(_message.Message):
    __slots__ = ("target_cluster", "overriders")
    TARGET_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    OVERRIDERS_FIELD_NUMBER: _ClassVar[int]
    target_cluster: ClusterAffinity
    overriders: Overriders
    def __init__(self, target_cluster: _Optional[_Union[ClusterAffinity, _Mapping]] = ..., overriders: _Optional[_Union[Overriders, _Mapping]] = ...) -> None: ...

class Overriders(_message.Message):
    __slots__ = ("plaintext", "image_overrider", "command_overrider", "args_overrider", "labels_overrider", "annotations_overrider", "field_overrider")
    PLAINTEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    COMMAND_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    ARGS_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    LABELS_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    FIELD_OVERRIDER_FIELD_NUMBER: _ClassVar[int]
    plaintext: _containers.RepeatedCompositeFieldContainer[PlaintextOverrider]
    image_overrider: _containers.RepeatedCompositeFieldContainer[ImageOverrider]
    command_overrider: _containers.RepeatedCompositeFieldContainer[CommandArgsOverrider]
    args_overrider: _containers.RepeatedCompositeFieldContainer[CommandArgsOverrider]
    labels_overrider: _containers.RepeatedCompositeFieldContainer[LabelAnnotationOverrider]
    annotations_overrider: _containers.RepeatedCompositeFieldContainer[LabelAnnotationOverrider]
    field_overrider: _containers.RepeatedCompositeFieldContainer[FieldOverrider]
    def __init__(self, plaintext: _Optional[_Iterable[_Union[PlaintextOverrider, _Mapping]]] = ..., image_overrider: _Optional[_Iterable[_Union[ImageOverrider, _Mapping]]] = ..., command_overrider: _Optional[_Iterable[_Union[CommandArgsOverrider, _Mapping]]] = ..., args_overrider: _Optional[_Iterable[_Union[CommandArgsOverrider, _Mapping]]] = ..., labels_overrider: _Optional[_Iterable[_Union[LabelAnnotationOverrider, _Mapping]]] = ..., annotations_overrider: _Optional[_Iterable[_Union[LabelAnnotationOverrider, _Mapping]]] = ..., field_overrider: _Optional[_Iterable[_Union[FieldOverrider, _Mapping]]] = ...) -> None: ...

class PlaintextOverrider(_message.Message):
    __slots__ = ("path", "operator", "value")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    path: str
    operator: str
    value: bytes
    def __init__(self, path: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class ImageOverrider(_message.Message):
    __slots__ = ("predicate", "component", "operator", "value")
    PREDICATE_FIELD_NUMBER: _ClassVar[int]
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    predicate: ImagePredicate
    component: str
    operator: str
    value: str
    def __init__(self, predicate: _Optional[_Union[ImagePredicate, _Mapping]] = ..., component: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ImagePredicate(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class CommandArgsOverrider(_message.Message):
    __slots__ = ("container_name", "operator", "value")
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    container_name: str
    operator: str
    value: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container_name: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[_Iterable[str]] = ...) -> None: ...

class LabelAnnotationOverrider(_message.Message):
    __slots__ = ("operator", "value")
    class ValueEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    operator: str
    value: _containers.ScalarMap[str, str]
    def __init__(self, operator: _Optional[str] = ..., value: _Optional[_Mapping[str, str]] = ...) -> None: ...

class FieldOverrider(_message.Message):
    __slots__ = ("field_path", "json", "yaml")
    FIELD_PATH_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    YAML_FIELD_NUMBER: _ClassVar[int]
    field_path: str
    json: _containers.RepeatedCompositeFieldContainer[PatchOperation]
    yaml: _containers.RepeatedCompositeFieldContainer[PatchOperation]
    def __init__(self, field_path: _Optional[str] = ..., json: _Optional[_Iterable[_Union[PatchOperation, _Mapping]]] = ..., yaml: _Optional[_Iterable[_Union[PatchOperation, _Mapping]]] = ...) -> None: ...

class PatchOperation(_message.Message):
    __slots__ = ("sub_path", "operator", "value")
    SUB_PATH_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    sub_path: str
    operator: str
    value: bytes
    def __init__(self, sub_path: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
