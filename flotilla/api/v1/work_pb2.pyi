import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from flotilla.api.v1 import core_pb2 as _core_pb2
from flotilla.api.v1 import meta_pb2 as _meta_pb2
from flotilla.api.v1 import policy_pb2 as _policy_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceBinding(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ResourceBindingSpec
    status: ResourceBindingStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceBindingSpec, _Mapping]] = ..., status: _Optional[_Union[ResourceBindingStatus, _Mapping]] = ...) -> None: ...

class ClusterResourceBinding(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ResourceBindingSpec
    status: ResourceBindingStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceBindingSpec, _Mapping]] = ..., status: _Optional[_Union[ResourceBindingStatus, _Mapping]] = ...) -> None: ...

class ResourceBindingSpec(_message.Message):
    __slots__ = ("resource", "propagate_deps", "replica_requirements", "replicas", "components", "clusters", "placement", "graceful_eviction_tasks", "required_by", "scheduler_name", "failover", "conflict_resolution", "reschedule_triggered_at", "suspension", "preserve_resources_on_deletion", "schedule_priority", "workload_affinity_groups", "active_eviction_history")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PROPAGATE_DEPS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    GRACEFUL_EVICTION_TASKS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_BY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    RESCHEDULE_TRIGGERED_AT_FIELD_NUMBER: _ClassVar[int]
    SUSPENSION_FIELD_NUMBER: _ClassVar[int]
    PRESERVE_RESOURCES_ON_DELETION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_AFFINITY_GROUPS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_EVICTION_HISTORY_FIELD_NUMBER: _ClassVar[int]
    resource: ObjectReference
    propagate_deps: bool
    replica_requirements: ReplicaRequirements
    replicas: int
    components: _containers.RepeatedCompositeFieldContainer[Component]
    clusters: _containers.RepeatedCompositeFieldContainer[TargetCluster]
    placement: _policy_pb2.Placement
    graceful_eviction_tasks: _containers.RepeatedCompositeFieldContainer[GracefulEvictionTask]
    required_by: _containers.RepeatedCompositeFieldContainer[BindingSnapshot]
    scheduler_name: str
    failover: _policy_pb2.FailoverBehavior
    conflict_resolution: str
    reschedule_triggered_at: _timestamp_pb2.Timestamp
    suspension: BindingSuspension
    preserve_resources_on_deletion: bool
    schedule_priority: BindingSchedulePriority
    workload_affinity_groups: WorkloadAffinityGroups
    active_eviction_history: _containers.RepeatedCompositeFieldContainer[EvictionHistoryItem]
    def __init__(self, resource: _Optional[_Union[ObjectReference, _Mapping]] = ..., propagate_deps: _Optional[bool] = ..., replica_requirements: _Optional[_Union[ReplicaRequirements, _Mapping]] = ..., replicas: _Optional[int] = ..., components: _Optional[_Iterable[_Union[Component, _Mapping]]] = ..., clusters: _Optional[_Iterable[_Union[TargetCluster, _Mapping]]] = ..., placement: _Optional[_Union[_policy_pb2.Placement, _Mapping]] = ..., graceful_eviction_tasks: _Optional[_Iterable[_Union[GracefulEvictionTask, _Mapping]]] = ..., required_by: _Optional[_Iterable[_Union[BindingSnapshot, _Mapping]]] = ..., scheduler_name: _Optional[str] = ..., failover: _Optional[_Union[_policy_pb2.FailoverBehavior, _Mapping]] = ..., conflict_resolution: _Optional[str] = ..., reschedule_triggered_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., suspension: _Optional[_Union[BindingSuspension, _Mapping]] = ..., preserve_resources_on_deletion: _Optional[bool] = ..., schedule_priority: _Optional[_Union[BindingSchedulePriority, _Mapping]] = ..., workload_affinity_groups: _Optional[_Union[WorkloadAffinityGroups, _Mapping]] = ..., active_eviction_history: _Optional[_Iterable[_Union[EvictionHistoryItem, _Mapping]]] = ...) -> None: ...

class ObjectReference(_message.Message):
    __slots__ = ("api_version", "kind", "namespace", "name", "uid", "resource_version")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[str] = ...) -> None: ...

class ReplicaRequirements(_message.Message):
    __slots__ = ("node_claim", "resource_request", "namespace", "priority_class_name")
    class ResourceRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODE_CLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_REQUEST_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    node_claim: NodeClaim
    resource_request: _containers.ScalarMap[str, str]
    namespace: str
    priority_class_name: str
    def __init__(self, node_claim: _Optional[_Union[NodeClaim, _Mapping]] = ..., resource_request: _Optional[_Mapping[str, str]] = ..., namespace: _Optional[str] = ..., priority_class_name: _Optional[str] = ...) -> None: ...

class NodeClaim(_message.Message):
    __slots__ = ("hard_node_affinity", "node_selector", "tolerations")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    HARD_NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    hard_node_affinity: _core_pb2.NodeSelector
    node_selector: _containers.ScalarMap[str, str]
    tolerations: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Toleration]
    def __init__(self, hard_node_affinity: _Optional[_Union[_core_pb2.NodeSelector, _Mapping]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., tolerations: _Optional[_Iterable[_Union[_meta_pb2.Toleration, _Mapping]]] = ...) -> None: ...

class Component(_message.Message):
    __slots__ = ("name", "replicas", "replica_requirements")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_REQUIREMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    replicas: int
    replica_requirements: ReplicaRequirements
    def __init__(self, name: _Optional[str] = ..., replicas: _Optional[int] = ..., replica_requirements: _Optional[_Union[ReplicaRequirements, _Mapping]] = ...) -> None: ...

class TargetCluster(_message.Message):
    __slots__ = ("name", "replicas", "components")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    replicas: int
    components: _containers.RepeatedCompositeFieldContainer[Component]
    def __init__(self, name: _Optional[str] = ..., replicas: _Optional[int] = ..., components: _Optional[_Iterable[_Union[Component, _Mapping]]] = ...) -> None: ...

class GracefulEvictionTask(_message.Message):
    __slots__ = ("from_cluster", "purge_mode", "replicas", "reason", "message", "producer", "grace_period_seconds", "suppress_deletion", "preserved_label_state", "creation_timestamp", "clusters_before_failover", "placement_before")
    class PreservedLabelStateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FROM_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    PURGE_MODE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_DELETION_FIELD_NUMBER: _ClassVar[int]
    PRESERVED_LABEL_STATE_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_BEFORE_FAILOVER_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    from_cluster: str
    purge_mode: str
    replicas: int
    reason: str
    message: str
    producer: str
    grace_period_seconds: int
    suppress_deletion: bool
    preserved_label_state: _containers.ScalarMap[str, str]
    creation_timestamp: _timestamp_pb2.Timestamp
    clusters_before_failover: _containers.RepeatedScalarFieldContainer[str]
    placement_before: _containers.RepeatedCompositeFieldContainer[TargetCluster]
    def __init__(self, from_cluster: _Optional[str] = ..., purge_mode: _Optional[str] = ..., replicas: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., producer: _Optional[str] = ..., grace_period_seconds: _Optional[int] = ..., suppress_deletion: _Optional[bool] = ..., preserved_label_state: _Optional[_Mapping[str, str]] = ..., creation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., clusters_before_failover: _Optional[_Iterable[str]] = ..., placement_before: _Optional[_Iterable[_Union[TargetCluster, _Mapping]]] = ...) -> None: ...

class BindingSnapshot(_message.Message):
    __slots__ = ("namespace", "name", "clusters")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    clusters: _containers.RepeatedCompositeFieldContainer[TargetCluster]
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., clusters: _Optional[_Iterable[_Union[TargetCluster, _Mapping]]] = ...) -> None: ...

class BindingSuspension(_message.Message):
    __slots__ = ("dispatching", "dispatching_on_clusters", "scheduling")
    DISPATCHING_FIELD_NUMBER: _ClassVar[int]
    DISPATCHING_ON_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    dispatching: bool
    dispatching_on_clusters: _policy_pb2.SuspendClusters
    scheduling: bool
    def __init__(self, dispatching: _Optional[bool] = ..., dispatching_on_clusters: _Optional[_Union[_policy_pb2.SuspendClusters, _Mapping]] = ..., scheduling: _Optional[bool] = ...) -> None: ...

class BindingSchedulePriority(_message.Message):
    __slots__ = ("priority",)
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    priority: int
    def __init__(self, priority: _Optional[int] = ...) -> None: ...

class WorkloadAffinityGroups(_message.Message):
    __slots__ = ("affinity_group", "anti_affinity_group")
    AFFINITY_GROUP_FIELD_NUMBER: _ClassVar[int]
    ANTI_AFFINITY_GROUP_FIELD_NUMBER: _ClassVar[int]
    affinity_group: str
    anti_affinity_group: str
    def __init__(self, affinity_group: _Optional[str] = ..., anti_affinity_group: _Optional[str] = ...) -> None: ...

class EvictionHistoryItem(_message.Message):
    __slots__ = ("cluster_name", "creation_timestamp")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    creation_timestamp: _timestamp_pb2.Timestamp
    def __init__(self, cluster_name: _Optional[str] = ..., creation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ResourceBindingStatus(_message.Message):
    __slots__ = ("scheduler_observed_generation", "scheduler_observing_affinity_name", "last_scheduled_time", "conditions", "aggregated_status", "application_unhealthy_since", "failover_history")
    SCHEDULER_OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_OBSERVING_AFFINITY_NAME_FIELD_NUMBER: _ClassVar[int]
    LAST_SCHEDULED_TIME_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    AGGREGATED_STATUS_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_UNHEALTHY_SINCE_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_HISTORY_FIELD_NUMBER: _ClassVar[int]
    scheduler_observed_generation: int
    scheduler_observing_affinity_name: str
    last_scheduled_time: _timestamp_pb2.Timestamp
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    aggregated_status: _containers.RepeatedCompositeFieldContainer[AggregatedStatusItem]
    application_unhealthy_since: _containers.RepeatedCompositeFieldContainer[ClusterTimestamp]
    failover_history: _containers.RepeatedCompositeFieldContainer[FailoverRecord]
    def __init__(self, scheduler_observed_generation: _Optional[int] = ..., scheduler_observing_affinity_name: _Optional[str] = ..., last_scheduled_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ..., aggregated_status: _Optional[_Iterable[_Union[AggregatedStatusItem, _Mapping]]] = ..., application_unhealthy_since: _Optional[_Iterable[_Union[ClusterTimestamp, _Mapping]]] = ..., failover_history: _Optional[_Iterable[_Union[FailoverRecord, _Mapping]]] = ...) -> None: ...

class ClusterTimestamp(_message.Message):
    __slots__ = ("cluster_name", "time", "unknown_since", "unknown_seconds")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_SINCE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    time: _timestamp_pb2.Timestamp
    unknown_since: _timestamp_pb2.Timestamp
    unknown_seconds: float
    def __init__(self, cluster_name: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., unknown_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., unknown_seconds: _Optional[float] = ...) -> None: ...

class FailoverRecord(_message.Message):
    __slots__ = ("time", "from_cluster", "to_clusters", "reason", "producer", "recovered_time", "clusters_before", "failed_back_time")
    TIME_FIELD_NUMBER: _ClassVar[int]
    FROM_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    TO_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    RECOVERED_TIME_FIELD_NUMBER: _ClassVar[int]
    CLUSTERS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    FAILED_BACK_TIME_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    from_cluster: str
    to_clusters: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    producer: str
    recovered_time: _timestamp_pb2.Timestamp
    clusters_before: _containers.RepeatedCompositeFieldContainer[TargetCluster]
    failed_back_time: _timestamp_pb2.Timestamp
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., from_cluster: _Optional[str] = ..., to_clusters: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., producer: _Optional[str] = ..., recovered_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., clusters_before: _Optional[_Iterable[_Union[TargetCluster, _Mapping]]] = ..., failed_back_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class AggregatedStatusItem(_message.Message):
    __slots__ = ("cluster_name", "status", "applied", "applied_message", "health", "settled", "creation_timestamp")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    APPLIED_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    status: bytes
    applied: bool
    applied_message: str
    health: str
    settled: bool
    creation_timestamp: _timestamp_pb2.Timestamp
    def __init__(self, cluster_name: _Optional[str] = ..., status: _Optional[bytes] = ..., applied: _Optional[bool] = ..., applied_message: _Optional[str] = ..., health: _Optional[str] = ..., settled: _Optional[bool] = ..., creation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Work(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: WorkSpec
    status: WorkStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[WorkSpec, _Mapping]] = ..., status: _Optional[_Union[WorkStatus, _Mapping]] = ...) -> None: ...

class WorkSpec(_message.Message):
    __slots__ = ("workload", "suspend_dispatching", "preserve_resources_on_deletion")
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_DISPATCHING_FIELD_NUMBER: _ClassVar[int]
    PRESERVE_RESOURCES_ON_DELETION_FIELD_NUMBER: _ClassVar[int]
    workload: WorkloadTemplate
    suspend_dispatching: bool
    preserve_resources_on_deletion: bool
    def __init__(self, workload: _Optional[_Union[WorkloadTemplate, _Mapping]] = ..., suspend_dispatching: _Optional[bool] = ..., preserve_resources_on_deletion: _Optional[bool] = ...) -> None: ...

class WorkloadTemplate(_message.Message):
    __slots__ = ("manifests",)
    MANIFESTS_FIELD_NUMBER: _ClassVar[int]
    manifests: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, manifests: _Optional[_Iterable[bytes]] = ...) -> None: ...

class WorkStatus(_message.Message):
    __slots__ = ("conditions", "manifest_statuses")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_STATUSES_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    manifest_statuses: _containers.RepeatedCompositeFieldContainer[ManifestStatus]
    def __init__(self, conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ..., manifest_statuses: _Optional[_Iterable[_Union[ManifestStatus, _Mapping]]] = ...) -> None: ...

class ManifestStatus(_message.Message):
    __slots__ = ("identifier", "status", "health")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    identifier: ResourceIdentifier
    status: bytes
    health: str
    def __init__(self, identifier: _Optional[_Union[ResourceIdentifier, _Mapping]] = ..., status: _Optional[bytes] = ..., health: _Optional[str] = ...) -> None: ...

class ResourceIdentifier(_message.Message):
    __slots__ = ("ordinal", "group", "version", "kind", "resource", "namespace", "name")
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ordinal: int
    group: str
    version: str
    kind: str
    resource: str
    namespace: str
    name: str
    def __init__(self, ordinal: _Optional[int] = ..., group: _Optional[str] = ..., version: _Optional[str] = ..., kind: _Optional[str] = ..., resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...
