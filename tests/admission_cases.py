"""Invalid Karmada documents and the error admission must give for each: data shared by several tests.

Each case is a valid seed-like document (one of `VALID_BASES`) with one thing
broken. The unit tests run them through `admit`; the end-to-end test sends
the same text through the running webhook and `flotillactl apply`. Every
document carries its namespace, so both paths see the same object.

`expected_path` is the path of the first (usually only) error and
`reason_substring` a part of its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message

from flotilla.api import codec
from flotilla.api.codec import CodecError, FieldError
from services.webhook.defaulting import AdmissionConfig, default_object
from services.webhook.validation import validate_object

DEFAULT_CONFIG = AdmissionConfig()


def parse_document(text: str) -> dict[str, Any]:
    """The one object of a YAML text."""
    (doc,) = codec.load_yaml_documents(text)
    return doc


def admit(
    doc: Mapping[str, Any],
    old: Message | None = None,
    config: AdmissionConfig = DEFAULT_CONFIG,
    now: datetime | None = None,
) -> tuple[Message | None, list[FieldError]]:
    """Parse, default and validate as the webhook does; the errors are those of the stage that failed.

    `old` is the stored object for an UPDATE (already admitted), None for a CREATE.
    """
    try:
        obj = codec.from_dict(doc)
    except CodecError as e:
        return None, e.errors
    default_object(obj, old, config, now if now is not None else datetime.now(UTC))
    return obj, validate_object(obj, old, config)


def _broken(base: str, old: str, new: str) -> str:
    """`base` with `old` replaced once; failing loudly keeps a case from silently testing the valid base."""
    if base.count(old) != 1:
        raise ValueError(f"{old!r} must occur exactly once in the base document")
    return base.replace(old, new)


CLUSTER = """\
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
  labels:
    env: prod
spec:
  apiEndpoint: https://172.23.0.7:6443
  syncMode: Push
  provider: aws
  region: us-east-1
  zone: us-east-1a
  taints:
    - key: maintenance
      value: planned
      effect: NoSchedule
"""

DIVIDED = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
    clusterTolerations:
      - key: cluster.karmada.io/not-ready
        operator: Exists
        effect: NoExecute
        tolerationSeconds: 30
    spreadConstraints:
      - spreadByField: cluster
        maxGroups: 2
        minGroups: 1
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames:
                - member1
            weight: 1
          - targetCluster:
              clusterNames:
                - member2
            weight: 2
"""

AFFINITIES = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: web
  placement:
    clusterAffinities:
      - affinityName: primary
        fieldSelector:
          matchExpressions:
            - key: region
              operator: In
              values:
                - us-east-1
      - affinityName: backup
        clusterNames:
          - member3
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
"""

APP_FAILOVER = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: mysql-propagation
  namespace: default
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: StatefulSet
      name: mysql
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 120
      purgeMode: Gracefully
      gracePeriodSeconds: 600
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
"""

STATE_PRESERVATION = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: flink-propagation
  namespace: default
spec:
  resourceSelectors:
    - apiVersion: flink.apache.org/v1beta1
      kind: FlinkDeployment
      name: flink-app
  failover:
    cluster:
      purgeMode: Directly
      statePreservation:
        rules:
          - aliasLabelName: application.karmada.io/cluster-failover-jobid
            jsonPath: "{ .jobStatus.jobID }"
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
"""

TOLERATIONS_CPP = """\
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: patient
spec:
  resourceSelectors:
    - apiVersion: v1
      kind: ConfigMap
      labelSelector:
        matchLabels:
          tier: config
  placement:
    clusterTolerations:
      - key: cluster.karmada.io/not-ready
        operator: Exists
        effect: NoExecute
        tolerationSeconds: 30
      - key: cluster.karmada.io/unreachable
        operator: Exists
        effect: NoExecute
"""

TAINT_POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata:
  name: not-ready-evicts
spec:
  addOnConditions:
    - conditionType: Ready
      operator: In
      statusValues:
        - "False"
        - Unknown
  removeOnConditions:
    - conditionType: Ready
      operator: In
      statusValues:
        - "True"
  taints:
    - key: cluster.karmada.io/not-ready
      effect: NoExecute
"""

HEALTH_INTERPRETER = """\
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: deployment-all-ready
spec:
  target:
    apiVersion: apps/v1
    kind: Deployment
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status.readyReplicas == observedObj.spec.replicas
        end
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
"""

VALID_BASES: list[tuple[str, str]] = [
    ("cluster", CLUSTER),
    ("divided", DIVIDED),
    ("affinities", AFFINITIES),
    ("app-failover", APP_FAILOVER),
    ("state-preservation", STATE_PRESERVATION),
    ("tolerations-cpp", TOLERATIONS_CPP),
    ("taint-policy", TAINT_POLICY),
    ("health-interpreter", HEALTH_INTERPRETER),
    ("deployment", DEPLOYMENT),
]

_TOLERATION = """\
      - key: cluster.karmada.io/not-ready
        operator: Exists
        effect: NoExecute
        tolerationSeconds: 30
"""
_SPREAD = """\
      - spreadByField: cluster
        maxGroups: 2
        minGroups: 1
"""
_RULE = """\
          - aliasLabelName: application.karmada.io/cluster-failover-jobid
            jsonPath: "{ .jobStatus.jobID }"
"""
_PRIMARY_REGION = """\
            - key: region
              operator: In
"""
_NAMES = "      clusterNames:\n        - member1\n        - member2"
_MAINTENANCE = "      effect: NoSchedule\n"
_SELECTORS = "  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: nginx\n"
_UNREACHABLE = "cluster.karmada.io/unreachable\n        operator: "
_NOT_READY_NO_EXECUTE = "    - key: cluster.karmada.io/not-ready\n      effect: NoExecute\n"
_OVERFLOW = """\
        overflowAffinities:
          - affinityName: spill
            clusterNames:
              - member4
"""
_ADD_ON_OPERATOR = '      operator: In\n      statusValues:\n        - "False"'

INVALID_CASES: list[tuple[str, str, str, str]] = [
    # -- rejected by the codec, before admission -------------------------------------------
    (
        "unknown-field",
        _broken(DIVIDED, _NAMES, _NAMES.replace("clusterNames", "clusterNamez")),
        "spec.placement.clusterAffinity.clusterNamez",
        "unknown field",
    ),
    (
        "wrong-type",
        _broken(DIVIDED, "spec:\n", 'spec:\n  priority: "high"\n'),
        "spec.priority",
        "expected integer, got string",
    ),
    ("template-without-kind", _broken(DEPLOYMENT, "kind: Deployment\n", ""), "kind", "required"),
    # -- Cluster -----------------------------------------------------------------------------
    (
        "cluster-taint-prefer-no-schedule",
        _broken(CLUSTER, "effect: NoSchedule", "effect: PreferNoSchedule"),
        "spec.taints[0].effect",
        'unsupported value "PreferNoSchedule"',
    ),
    ("cluster-taint-without-effect", _broken(CLUSTER, _MAINTENANCE, ""), "spec.taints[0].effect", "required"),
    (
        "cluster-taint-key-not-qualified",
        _broken(CLUSTER, "key: maintenance", "key: -maintenance"),
        "spec.taints[0].key",
        "name part must consist of alphanumeric characters",
    ),
    (
        "cluster-taint-value-not-label-value",
        _broken(CLUSTER, "value: planned", 'value: "planned work"'),
        "spec.taints[0].value",
        "a valid label must be an empty string",
    ),
    (
        "cluster-duplicate-taint",
        _broken(CLUSTER, _MAINTENANCE, _MAINTENANCE + "    - key: maintenance\n" + _MAINTENANCE),
        "spec.taints[1]",
        "taints must be unique by key and effect",
    ),
    (
        "cluster-sync-mode",
        _broken(CLUSTER, "syncMode: Push", "syncMode: Poll"),
        "spec.syncMode",
        'unsupported value "Poll"',
    ),
    ("cluster-name", _broken(CLUSTER, "name: member1", "name: Member1"), "metadata.name", "RFC 1123 label"),
    # A member's token goes only over TLS, and only the one kept for the cluster.
    ("cluster-plain-endpoint", _broken(CLUSTER, "https://172.23.0.7:6443", "http://172.23.0.7:6443"),
     "spec.apiEndpoint", "https://"),
    ("cluster-endpoint-without-host", _broken(CLUSTER, "https://172.23.0.7:6443", "https:///x"),
     "spec.apiEndpoint", "with a host"),
    ("cluster-other-secret", _broken(CLUSTER, "  syncMode: Push\n",
                                     "  syncMode: Push\n  secretRef:\n    namespace: karmada-cluster\n"
                                     "    name: member2\n"), "spec.secretRef", "karmada-cluster/member1"),
    ("cluster-secret-elsewhere", _broken(CLUSTER, "  syncMode: Push\n",
                                         "  syncMode: Push\n  secretRef:\n    namespace: default\n"
                                         "    name: member1\n"), "spec.secretRef", "the Secret kept for"),
    # -- tolerations (PP and CPP share the rules) ---------------------------------------------
    (
        "toleration-operator-lt",
        _broken(DIVIDED, "operator: Exists", "operator: Lt"),
        "spec.placement.clusterTolerations[0].operator",
        'unsupported value "Lt"',
    ),
    (
        "toleration-exists-with-value",
        _broken(DIVIDED, "operator: Exists\n", "operator: Exists\n        value: yes-please\n"),
        "spec.placement.clusterTolerations[0].value",
        "value must be empty when `operator` is 'Exists'",
    ),
    (
        "toleration-effect",
        _broken(DIVIDED, "effect: NoExecute", "effect: Evict"),
        "spec.placement.clusterTolerations[0].effect",
        'unsupported value "Evict"',
    ),
    (
        "toleration-seconds-without-no-execute",
        _broken(DIVIDED, "effect: NoExecute", "effect: NoSchedule"),
        "spec.placement.clusterTolerations[0].effect",
        "effect must be 'NoExecute' when `tolerationSeconds` is set",
    ),
    (
        "cpp-toleration-operator-gt",
        _broken(TOLERATIONS_CPP, _UNREACHABLE + "Exists", _UNREACHABLE + "Gt"),
        "spec.placement.clusterTolerations[1].operator",
        'unsupported value "Gt"',
    ),
    # -- replica scheduling ----------------------------------------------------------------------
    (
        "static-weight-zero",
        _broken(DIVIDED, "weight: 2", "weight: 0"),
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[1].weight",
        "must be greater than 0",
    ),
    (
        "static-weight-negative",
        _broken(DIVIDED, "weight: 1", "weight: -1"),
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
        "must be greater than 0",
    ),
    (
        "replica-scheduling-type",
        _broken(DIVIDED, "replicaSchedulingType: Divided", "replicaSchedulingType: Split"),
        "spec.placement.replicaScheduling.replicaSchedulingType",
        'unsupported value "Split"',
    ),
    (
        "replica-division-preference",
        _broken(DIVIDED, "replicaDivisionPreference: Weighted", "replicaDivisionPreference: Balanced"),
        "spec.placement.replicaScheduling.replicaDivisionPreference",
        'unsupported value "Balanced"',
    ),
    (
        "dynamic-weight",
        _broken(AFFINITIES, "dynamicWeight: AvailableReplicas", "dynamicWeight: FreeMemory"),
        "spec.placement.replicaScheduling.weightPreference.dynamicWeight",
        'unsupported value "FreeMemory"',
    ),
    # -- spread constraints ----------------------------------------------------------------------
    (
        "spread-min-above-max",
        _broken(DIVIDED, "minGroups: 1", "minGroups: 3"),
        "spec.placement.spreadConstraints[0].minGroups",
        "must not be greater than maxGroups (2)",
    ),
    (
        "spread-negative-max",
        _broken(DIVIDED, "maxGroups: 2", "maxGroups: -1"),
        "spec.placement.spreadConstraints[0].maxGroups",
        "must be greater than or equal to 0",
    ),
    (
        "spread-field-and-label",
        _broken(DIVIDED, "- spreadByField: cluster\n", "- spreadByField: cluster\n        spreadByLabel: rack\n"),
        "spec.placement.spreadConstraints[0].spreadByLabel",
        "spreadByLabel should not co-exist with spreadByField",
    ),
    (
        "spread-unknown-field",
        _broken(DIVIDED, "spreadByField: cluster", "spreadByField: rack"),
        "spec.placement.spreadConstraints[0].spreadByField",
        'unsupported value "rack"',
    ),
    (
        "spread-duplicate-field",
        _broken(DIVIDED, _SPREAD, _SPREAD + _SPREAD),
        "spec.placement.spreadConstraints[1].spreadByField",
        "multiple cluster spread constraints are not allowed",
    ),
    (
        "spread-region-without-cluster",
        _broken(DIVIDED, "spreadByField: cluster", "spreadByField: region"),
        "spec.placement.spreadConstraints",
        "the cluster spread constraint must be enabled",
    ),
    # -- resource selectors ------------------------------------------------------------------------
    (
        "no-resource-selectors",
        _broken(DIVIDED, _SELECTORS, "  resourceSelectors: []\n"),
        "spec.resourceSelectors",
        "at least one resource",
    ),
    (
        "selector-without-api-version",
        _broken(DIVIDED, "    - apiVersion: apps/v1\n      kind: Deployment\n", "    - kind: Deployment\n"),
        "spec.resourceSelectors[0].apiVersion",
        "required",
    ),
    (
        "selector-without-kind",
        _broken(DIVIDED, "      kind: Deployment\n", ""),
        "spec.resourceSelectors[0].kind",
        "required",
    ),
    (
        "selector-other-namespace",
        _broken(DIVIDED, "      name: nginx\n", "      name: nginx\n      namespace: kube-system\n"),
        "spec.resourceSelectors[0].namespace",
        'its own namespace "default"',
    ),
    # -- cluster affinity --------------------------------------------------------------------------
    (
        "affinity-with-affinities",
        _broken(AFFINITIES, "  placement:\n", "  placement:\n    clusterAffinity:\n" + _NAMES + "\n"),
        "spec.placement",
        "clusterAffinities cannot co-exist with clusterAffinity",
    ),
    (
        "affinity-name-invalid",
        _broken(AFFINITIES, "affinityName: primary", 'affinityName: "primary group"'),
        "spec.placement.clusterAffinities[0].affinityName",
        "name part must consist of alphanumeric characters",
    ),
    (
        "affinity-name-duplicate",
        _broken(AFFINITIES, "affinityName: backup", "affinityName: primary"),
        "spec.placement.clusterAffinities[1].affinityName",
        "each affinity term in a policy must have a unique name",
    ),
    (
        "field-selector-key",
        _broken(AFFINITIES, "- key: region", "- key: city"),
        "spec.placement.clusterAffinities[0].fieldSelector.matchExpressions[0].key",
        'unsupported key "city", must be provider, region, or zone',
    ),
    (
        "field-selector-operator",
        _broken(AFFINITIES, _PRIMARY_REGION, _PRIMARY_REGION.replace("operator: In", "operator: Exists")),
        "spec.placement.clusterAffinities[0].fieldSelector.matchExpressions[0].operator",
        'unsupported operator "Exists", must be In or NotIn',
    ),
    (
        "overflow-without-dynamic-or-aggregated",
        # Overflow terms, but replicas split by static weights.
        _broken(
            _broken(AFFINITIES, "          - member3\n", "          - member3\n" + _OVERFLOW),
            "dynamicWeight: AvailableReplicas",
            "staticWeightList: []",
        ),
        "spec.placement.clusterAffinities[1].overflowAffinities",
        "only supported with Divided replica scheduling",
    ),
    (
        "cluster-label-selector-operator",
        _broken(
            TOLERATIONS_CPP,
            "  placement:\n",
            "  placement:\n    clusterAffinity:\n      labelSelector:\n"
            "        matchExpressions:\n          - key: env\n            operator: Equals\n",
        ),
        "spec.placement.clusterAffinity.labelSelector.matchExpressions[0].operator",
        'unsupported value "Equals"',
    ),
    (
        "workload-affinity-same-key",
        _broken(
            DIVIDED,
            "  placement:\n",
            "  placement:\n    workloadAffinity:\n      affinity:\n"
            "        groupByLabelKey: app\n      antiAffinity:\n        groupByLabelKey: app\n",
        ),
        "spec.placement.workloadAffinity.antiAffinity.groupByLabelKey",
        "must differ from affinity.groupByLabelKey",
    ),
    # -- other policy fields ---------------------------------------------------------------------------
    (
        "preemption-always-without-name",
        _broken(TOLERATIONS_CPP, "spec:\n", "spec:\n  preemption: Always\n"),
        "spec.resourceSelectors[0].name",
        "required when preemption is Always",
    ),
    (
        "conflict-resolution",
        _broken(DIVIDED, "spec:\n", "spec:\n  conflictResolution: Ignore\n"),
        "spec.conflictResolution",
        'unsupported value "Ignore"',
    ),
    (
        "suspension-dispatching-and-clusters",
        _broken(
            DIVIDED,
            "spec:\n",
            "spec:\n  suspension:\n    dispatching: true\n    dispatchingOnClusters:\n"
            "      clusterNames:\n        - member1\n",
        ),
        "spec.suspension.dispatchingOnClusters",
        "cannot co-exist with dispatching: true",
    ),
    # -- application failover ----------------------------------------------------------------------
    (
        "app-failover-without-decision-conditions",
        _broken(APP_FAILOVER, "      decisionConditions:\n        tolerationSeconds: 120\n", ""),
        "spec.failover.application.decisionConditions",
        "required",
    ),
    (
        "app-failover-without-propagate-deps",
        _broken(APP_FAILOVER, "  propagateDeps: true\n", ""),
        "spec.propagateDeps",
        "propagateDeps must be true",
    ),
    (
        "app-failover-grace-period-with-directly",
        _broken(APP_FAILOVER, "purgeMode: Gracefully", "purgeMode: Directly"),
        "spec.failover.application.gracePeriodSeconds",
        "only allowed when purgeMode is Gracefully",
    ),
    (
        "app-failover-grace-period-zero",
        _broken(APP_FAILOVER, "gracePeriodSeconds: 600", "gracePeriodSeconds: 0"),
        "spec.failover.application.gracePeriodSeconds",
        "must be greater than 0",
    ),
    (
        "app-failover-negative-toleration",
        _broken(APP_FAILOVER, "tolerationSeconds: 120", "tolerationSeconds: -1"),
        "spec.failover.application.decisionConditions.tolerationSeconds",
        "must be greater than or equal to 0",
    ),
    (
        "app-failover-purge-mode",
        _broken(APP_FAILOVER, "purgeMode: Gracefully\n      gracePeriodSeconds: 600\n", "purgeMode: Eventually\n"),
        "spec.failover.application.purgeMode",
        'unsupported value "Eventually"',
    ),
    # -- cluster failover and state preservation ---------------------------------------------------
    (
        "cluster-failover-purge-never",
        _broken(STATE_PRESERVATION, "purgeMode: Directly", "purgeMode: Never"),
        "spec.failover.cluster.purgeMode",
        'unsupported value "Never"',
    ),
    (
        "failback-negative-window",
        _broken(STATE_PRESERVATION, "      purgeMode: Directly\n",
                "      purgeMode: Directly\n      failback:\n        enabled: true\n"
                "        stabilizationWindowSeconds: -5\n"),
        "spec.failover.cluster.failback.stabilizationWindowSeconds",
        "must be greater than or equal to 0",
    ),
    (
        "failback-max-concurrent-zero",
        _broken(STATE_PRESERVATION, "      purgeMode: Directly\n",
                "      purgeMode: Directly\n      failback:\n        enabled: true\n        maxConcurrent: 0\n"),
        "spec.failover.cluster.failback.maxConcurrent",
        "must be greater than or equal to 1",
    ),
    (
        "state-preservation-without-json-path",
        _broken(STATE_PRESERVATION, _RULE, _RULE.splitlines(keepends=True)[0]),
        "spec.failover.cluster.statePreservation.rules[0].jsonPath",
        "required",
    ),
    (
        "state-preservation-without-alias",
        _broken(STATE_PRESERVATION, _RULE, '          - jsonPath: "{ .jobStatus.jobID }"\n'),
        "spec.failover.cluster.statePreservation.rules[0].aliasLabelName",
        "required",
    ),
    (
        "state-preservation-alias-not-label-key",
        _broken(STATE_PRESERVATION, "application.karmada.io/cluster-failover-jobid", '"job id"'),
        "spec.failover.cluster.statePreservation.rules[0].aliasLabelName",
        "name part must consist of alphanumeric characters",
    ),
    (
        "state-preservation-unbalanced-braces",
        _broken(STATE_PRESERVATION, '"{ .jobStatus.jobID }"', '"{ .jobStatus.jobID"'),
        "spec.failover.cluster.statePreservation.rules[0].jsonPath",
        "unbalanced braces",
    ),
    (
        "state-preservation-unparsable-json-path",
        _broken(STATE_PRESERVATION, '"{ .jobStatus.jobID }"', '"{ .jobStatus[ }"'),
        "spec.failover.cluster.statePreservation.rules[0].jsonPath",
        "invalid JSONPath expression",
    ),
    # -- ClusterTaintPolicy --------------------------------------------------------------------------
    (
        "taint-policy-duplicate-taint",
        _broken(TAINT_POLICY, _NOT_READY_NO_EXECUTE, 2 * _NOT_READY_NO_EXECUTE + "      value: again\n"),
        "spec.taints[1]",
        "Duplicate taint with the same key(cluster.karmada.io/not-ready) and effect(NoExecute) is not allowed",
    ),
    (
        "taint-policy-without-taints",
        _broken(TAINT_POLICY, "  taints:\n" + _NOT_READY_NO_EXECUTE, "  taints: []\n"),
        "spec.taints",
        "at least one taint",
    ),
    (
        "taint-policy-condition-operator",
        _broken(TAINT_POLICY, _ADD_ON_OPERATOR, _ADD_ON_OPERATOR.replace("In", "Exists")),
        "spec.addOnConditions[0].operator",
        'unsupported value "Exists"',
    ),
    # -- ResourceInterpreterCustomization ------------------------------------------------------------
    (
        "interpreter-lua-does-not-compile",
        _broken(HEALTH_INTERPRETER, "        end\n", ""),
        "spec.customizations.healthInterpretation.luaScript",
        "Lua script does not compile",
    ),
    (
        "interpreter-without-target-kind",
        _broken(HEALTH_INTERPRETER, "    kind: Deployment\n", ""),
        "spec.target.kind",
        "required",
    ),
    # -- metadata and templates ----------------------------------------------------------------------
    (
        "template-without-name",
        _broken(DEPLOYMENT, "  name: nginx\n", ""),
        "metadata.name",
        "required",
    ),
    (
        "template-name-not-dns-subdomain",
        _broken(DEPLOYMENT, "name: nginx", "name: Nginx_1"),
        "metadata.name",
        "RFC 1123 subdomain",
    ),
    (
        "policy-name-not-dns-subdomain",
        _broken(DIVIDED, "name: nginx-propagation", "name: Nginx.Propagation"),
        "metadata.name",
        "RFC 1123 subdomain",
    ),
]
