"""`get` tables, ages, JSON/YAML shapes and `describe` text, from objects alone (no etcd)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from google.protobuf.message import Message

from flotilla.api import codec, registry
from flotilla.api.errors import UserError
from flotilla.api.v1 import cluster_pb2
from flotilla.cli import get, printers
from flotilla.cli.age import human_duration, since, since_text
from flotilla.cli.describe import describe, smart_label, tabwrite

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
FIVE_MINUTES_AGO = "2026-03-01T11:55:00Z"
TWO_HOURS_AGO = "2026-03-01T10:00:00Z"


def load(text: str) -> Any:
    (doc,) = codec.load_yaml_documents(text)
    return codec.from_dict(doc)


def lines(text: str) -> list[list[str]]:
    """A table as rows of cells (cells never hold three spaces)."""
    return [[c.strip() for c in line.split("   ") if c.strip()] for line in text.splitlines()]


CLUSTER = f"""
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {{name: member1, creationTimestamp: "{FIVE_MINUTES_AGO}", labels: {{env: prod}}}}
spec: {{syncMode: Push, apiEndpoint: "https://10.0.0.1:6443", provider: aws, region: eu-west-1, zone: eu-west-1a}}
status:
  kubernetesVersion: v1.29.2
  conditions:
  - {{type: Ready, status: "False", reason: ClusterNotReachable, message: "cluster is not reachable",
     lastTransitionTime: "{FIVE_MINUTES_AGO}"}}
"""

DEPLOYMENT = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: nginx, namespace: default, creationTimestamp: "{TWO_HOURS_AGO}", labels: {{app: nginx}}}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: nginx}}}}
  template:
    metadata: {{labels: {{app: nginx}}}}
    spec: {{containers: [{{name: nginx, image: "nginx:1.25"}}]}}
status:
  readyReplicas: 2
  updatedReplicas: 3
  availableReplicas: 2
  conditions:
  - {{type: Available, status: "True", reason: MinimumReplicasAvailable, message: "has minimum availability",
     lastTransitionTime: "{TWO_HOURS_AGO}"}}
"""


def event(reason: str, message: str, count: int = 1, first: str = FIVE_MINUTES_AGO, last: str = "") -> Message:
    return load(f"""
apiVersion: v1
kind: Event
metadata: {{name: member1.{reason.lower()}, namespace: default}}
involvedObject: {{kind: Cluster, name: member1, apiVersion: cluster.karmada.io/v1alpha1}}
type: Warning
reason: {reason}
message: "{message}"
count: {count}
source: {{component: cluster-status-controller}}
firstTimestamp: "{first}"
lastTimestamp: "{last or first}"
""")


# -- ages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (45, "45s"),
        (119, "119s"),
        (120, "2m"),
        (192, "3m12s"),
        (599, "9m59s"),
        (600, "10m"),
        (150 * 60, "150m"),  # kubectl keeps minutes up to three hours
        (3 * 3600 + 30 * 60, "3h30m"),
        (5 * 3600, "5h"),
        (8 * 3600 + 59 * 60, "8h"),
        (47 * 3600, "47h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (7 * 86400, "7d"),
        (120 * 86400, "120d"),
        (730 * 86400, "2y"),
        (760 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_is_kubectls(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_ages_of_unset_or_unreadable_times_are_unknown() -> None:
    assert since(cluster_pb2.Cluster().metadata.creation_timestamp, NOW) == "<unknown>"
    assert since_text("", NOW) == since_text("yesterday", NOW) == since_text(None, NOW) == "<unknown>"
    assert since_text(FIVE_MINUTES_AGO, NOW) == "5m"
    # A naive now is UTC.
    assert since_text(FIVE_MINUTES_AGO, NOW.replace(tzinfo=None)) == "5m"


# -- Karmada kinds -------------------------------------------------------------------


def test_cluster_table_and_wide_columns() -> None:
    cluster = load(CLUSTER)
    assert lines(printers.render_table(registry.CLUSTER, [cluster], NOW)) == [
        ["NAME", "VERSION", "MODE", "READY", "AGE"],
        ["member1", "v1.29.2", "Push", "False", "5m"],
    ]
    wide = lines(printers.render_table(registry.CLUSTER, [cluster], NOW, wide=True))
    assert wide[0] == ["NAME", "VERSION", "MODE", "READY", "AGE", "APIENDPOINT", "PROVIDER", "REGION", "ZONE"]
    assert wide[1][5:] == ["https://10.0.0.1:6443", "aws", "eu-west-1", "eu-west-1a"]


def test_unprobed_cluster_is_unknown_and_columns_stay_aligned() -> None:
    fresh = load("""
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member-with-a-long-name}
spec: {syncMode: Pull}
""")
    text = printers.render_table(registry.CLUSTER, [load(CLUSTER), fresh], NOW)
    header, first, second = text.splitlines()
    assert second.split() == ["member-with-a-long-name", "Pull", "Unknown", "<unknown>"]
    assert header.index("READY") == first.index("False") == second.index("Unknown")


def test_policy_tables_show_karmadas_defaults() -> None:
    pp = load(f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: nginx, namespace: default, creationTimestamp: "{TWO_HOURS_AGO}"}}
spec: {{resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment}}]}}
""")
    cpp = load(f"""
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {{name: everything, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{conflictResolution: Overwrite, priority: 5, resourceSelectors: [{{apiVersion: v1, kind: ConfigMap}}]}}
""")
    assert lines(printers.render_table(registry.PROPAGATION_POLICY, [pp], NOW)) == [
        ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ["nginx", "Abort", "0", "120m"],
    ]
    assert lines(printers.render_table(registry.CLUSTER_PROPAGATION_POLICY, [cpp], NOW))[1] == [
        "everything", "Overwrite", "5", "5m",
    ]


BINDING = f"""
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {{name: nginx-deployment, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec:
  resource: {{apiVersion: apps/v1, kind: Deployment, name: nginx, namespace: default}}
  replicas: 3
  clusters: [{{name: member2, replicas: 3}}]
  gracefulEvictionTasks: [{{fromCluster: member1, reason: TaintUntolerated, producer: taint-manager}}]
status:
  conditions:
  - {{type: Scheduled, status: "True", reason: Success, lastTransitionTime: "{FIVE_MINUTES_AGO}"}}
"""


def test_binding_tables_for_both_scopes() -> None:
    rb = load(BINDING)
    assert lines(printers.render_table(registry.RESOURCE_BINDING, [rb], NOW)) == [
        ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"],
        # FullyApplied is absent: blank, as Karmada's JSONPath column shows it.
        ["nginx-deployment", "True", "5m"],
    ]
    wide = lines(printers.render_table(registry.RESOURCE_BINDING, [rb], NOW, wide=True))
    assert wide[0][-2:] == ["CLUSTERS", "EVICTING"]
    assert wide[1][-2:] == ["member2:3", "member1"]
    crb = load(BINDING.replace("ResourceBinding", "ClusterResourceBinding").replace("namespace: default, ", ""))
    assert lines(printers.render_table(registry.CLUSTER_RESOURCE_BINDING, [crb], NOW))[1][0] == "nginx-deployment"


def test_work_table_names_the_workload_kind() -> None:
    work = load(f"""
apiVersion: work.karmada.io/v1alpha1
kind: Work
metadata: {{name: nginx-687f7fb96f, namespace: karmada-es-member1, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec:
  workload:
    manifests:
    - {{apiVersion: apps/v1, kind: Deployment, metadata: {{name: nginx, namespace: default}}}}
status:
  conditions: [{{type: Applied, status: "True", reason: AppliedSuccessful, lastTransitionTime: "{FIVE_MINUTES_AGO}"}}]
""")
    assert lines(printers.render_table(registry.WORK, [work], NOW)) == [
        ["NAME", "WORKLOAD-KIND", "APPLIED", "AGE"],
        ["nginx-687f7fb96f", "Deployment", "True", "5m"],
    ]


def test_taint_policy_interpreter_and_lease_tables() -> None:
    ctp = load(f"""
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {{name: not-ready, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{taints: [{{key: cluster.karmada.io/not-ready, effect: NoSchedule}}]}}
""")
    ric = load(f"""
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {{name: deployment-health, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{target: {{apiVersion: apps/v1, kind: Deployment}}}}
""")
    lease = load(f"""
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {{name: member3, namespace: karmada-cluster, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{holderIdentity: member3-agent, leaseDurationSeconds: 40}}
""")
    assert lines(printers.render_table(registry.CLUSTER_TAINT_POLICY, [ctp], NOW)) == [
        ["NAME", "AGE"], ["not-ready", "5m"],
    ]
    assert lines(printers.render_table(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, [ric], NOW)) == [
        ["NAME", "TARGET-API-VERSION", "TARGET-KIND", "AGE"], ["deployment-health", "apps/v1", "Deployment", "5m"],
    ]
    assert lines(printers.render_table(registry.LEASE, [lease], NOW)) == [
        ["NAME", "HOLDER", "AGE"], ["member3", "member3-agent", "5m"],
    ]


def test_events_table_folds_repeats_and_sorts_by_time() -> None:
    old = event("ClusterNotReady", "cluster is\nnot ready", count=3, first=TWO_HOURS_AGO, last=FIVE_MINUTES_AGO)
    new = event("TaintClusterSucceed", "tainted", first="2026-03-01T11:59:15Z")
    ordered = printers.display_order(registry.EVENT, [new, old])
    assert lines(printers.render_table(registry.EVENT, ordered, NOW)) == [
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        ["5m (x3 over 120m)", "Warning", "ClusterNotReady", "cluster/member1", "cluster is not ready"],
        ["45s", "Warning", "TaintClusterSucceed", "cluster/member1", "tainted"],
    ]
    wide = lines(printers.render_table(registry.EVENT, ordered, NOW, wide=True))
    # SUBOBJECT is empty here, so it leaves no cell of its own in the split.
    assert wide[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
                       "FIRST SEEN", "COUNT", "NAME"]
    assert wide[1][4:] == ["cluster-status-controller", "cluster is not ready", "120m", "3",
                           "member1.clusternotready"]


# -- resource templates ------------------------------------------------------------------


def test_deployment_table_reads_the_templates_json() -> None:
    deployment = load(DEPLOYMENT)
    rt = registry.lookup("deployments")
    assert lines(printers.render_table(rt, [deployment], NOW)) == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["nginx", "2/3", "3", "2", "120m"],
    ]
    assert lines(printers.render_table(rt, [deployment], NOW, wide=True))[1][5:] == ["nginx", "nginx:1.25", "app=nginx"]


def test_statefulset_without_status_or_replicas_is_zero_of_one() -> None:
    sts = load(f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: mysql, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{serviceName: mysql, template: {{spec: {{containers: [{{name: mysql, image: "mysql:8"}}]}}}}}}
""")
    assert lines(printers.render_table(registry.lookup("sts"), [sts], NOW)) == [
        ["NAME", "READY", "AGE"], ["mysql", "0/1", "5m"],
    ]


def test_configmap_secret_service_and_other_templates() -> None:
    cm = load(f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
data: {{a: "1", b: "2"}}
binaryData: {{c: AA==}}
""")
    secret = load(f"""
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
type: kubernetes.io/basic-auth
data: {{username: YWRtaW4=}}
stringData: {{password: hunter2}}
""")
    svc = load(f"""
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec:
  type: NodePort
  selector: {{app: nginx}}
  ports: [{{port: 80, nodePort: 30080}}, {{port: 53, protocol: UDP}}]
""")
    job = load(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: migrate, namespace: default, creationTimestamp: "{FIVE_MINUTES_AGO}"}}
spec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: m, image: busybox}}]}}}}}}
""")
    assert lines(printers.render_table(registry.lookup("cm"), [cm], NOW)) == [["NAME", "DATA", "AGE"],
                                                                               ["settings", "3", "5m"]]
    assert lines(printers.render_table(registry.lookup("secrets"), [secret], NOW)) == [
        ["NAME", "TYPE", "DATA", "AGE"], ["creds", "kubernetes.io/basic-auth", "2", "5m"],
    ]
    assert lines(printers.render_table(registry.lookup("svc"), [svc], NOW, wide=True)) == [
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"],
        ["web", "NodePort", "<none>", "<none>", "80:30080/TCP,53/UDP", "5m", "app=nginx"],
    ]
    assert lines(printers.render_table(registry.lookup("jobs"), [job], NOW)) == [["NAME", "AGE"], ["migrate", "5m"]]


def test_label_selector_formatting() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["web", "api"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists"},
        ],
    }
    assert printers.format_label_selector(selector) == "a=1,b=2,tier in (api,web),!canary,zone"
    assert printers.format_label_selector({}) == printers.format_label_selector(None) == "<none>"


def test_all_namespaces_adds_a_namespace_column_to_namespaced_kinds_only() -> None:
    other = load(DEPLOYMENT.replace("namespace: default", "namespace: shop"))
    rt = registry.lookup("deploy")
    table = lines(printers.render_table(rt, [load(DEPLOYMENT), other], NOW, namespace_column=True))
    assert [row[:2] for row in table] == [["NAMESPACE", "NAME"], ["default", "nginx"], ["shop", "nginx"]]
    clusters = lines(printers.render_table(registry.CLUSTER, [load(CLUSTER)], NOW, namespace_column=True))
    assert clusters[0][0] == "NAME"


# -- JSON, YAML, names --------------------------------------------------------------------


def test_json_of_one_object_is_the_object_indented_by_four() -> None:
    text = printers.render_json(registry.CLUSTER, [load(CLUSTER)], single=True)
    data = json.loads(text)
    assert data["kind"] == "Cluster" and data["metadata"]["name"] == "member1"
    assert data["spec"]["apiEndpoint"] == "https://10.0.0.1:6443"
    assert text.splitlines()[1].startswith('    "apiVersion"')


def test_json_and_yaml_of_a_list_have_items() -> None:
    # Objects built in code may lack apiVersion and kind; the output never does.
    bare = cluster_pb2.Cluster()
    bare.metadata.name = "bare"
    deployment = load(DEPLOYMENT)
    data = json.loads(printers.render_json(registry.CLUSTER, [load(CLUSTER), bare], single=False))
    assert (data["apiVersion"], data["kind"]) == ("v1", "List")
    assert [(i["kind"], i["metadata"]["name"]) for i in data["items"]] == [("Cluster", "member1"), ("Cluster", "bare")]
    assert data["items"][1]["apiVersion"] == "cluster.karmada.io/v1alpha1"
    listed = yaml.safe_load(printers.render_yaml(registry.lookup("deploy"), [deployment], single=False))
    assert listed["items"][0]["status"]["readyReplicas"] == 2
    assert list(listed) == ["apiVersion", "items", "kind", "metadata"]
    single = yaml.safe_load(printers.render_yaml(registry.lookup("deploy"), [deployment], single=True))
    assert single["spec"]["replicas"] == 3
    empty = json.loads(printers.render_json(registry.CLUSTER, [], single=False))
    assert empty["items"] == []


def test_names_output_and_the_empty_list_message() -> None:
    assert printers.render_names(registry.lookup("deploy"), [load(DEPLOYMENT)]) == "deployment.apps/nginx"
    assert printers.render_names(registry.CLUSTER, [load(CLUSTER)]) == "cluster.cluster.karmada.io/member1"
    assert printers.no_resources("default") == "No resources found in default namespace."
    assert printers.no_resources(None) == "No resources found"


def test_get_render_picks_the_format() -> None:
    rt = registry.CLUSTER
    cluster = load(CLUSTER)
    assert get.render(rt, [cluster], "wide", NOW, single=False, all_namespaces=False).startswith("NAME")
    assert json.loads(get.render(rt, [cluster], "json", NOW, single=True, all_namespaces=False))["kind"] == "Cluster"
    assert get.render(rt, [cluster], "name", NOW, single=True, all_namespaces=False).startswith("cluster.")


# -- command-line parsing helpers ---------------------------------------------------------


def test_label_selectors_are_equality_only() -> None:
    assert get.parse_selector("app=nginx, tier==web,app.kubernetes.io/name=x,empty=") == {
        "app": "nginx", "tier": "web", "app.kubernetes.io/name": "x", "empty": "",
    }
    assert get.parse_selector(None) is None
    for bad in ("app!=nginx", "tier in (web)", "app", "=x", "a=b,"):
        with pytest.raises(UserError, match="only key=value"):
            get.parse_selector(bad)


def test_kind_slash_name() -> None:
    assert get.split_kind_name("clusters/member1", None) == ("clusters", "member1")
    assert get.split_kind_name("clusters", "member1") == ("clusters", "member1")
    with pytest.raises(UserError):
        get.split_kind_name("clusters/member1", "member2")
    with pytest.raises(UserError):
        get.split_kind_name("clusters/", None)


def test_namespace_defaults_like_kubectl() -> None:
    assert get.namespace_for(registry.RESOURCE_BINDING, None) == "default"
    assert get.namespace_for(registry.RESOURCE_BINDING, "shop") == "shop"
    assert get.namespace_for(registry.RESOURCE_BINDING, "shop", all_namespaces=True) is None
    assert get.namespace_for(registry.CLUSTER, "shop") is None


# -- describe -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "label"),
    [
        ("apiEndpoint", "API Endpoint"),
        ("kubernetesVersion", "Kubernetes Version"),
        ("uid", "UID"),
        ("clusterIP", "Cluster IP"),
        ("proxyURL", "Proxy URL"),
        ("APIVersion", "API Version"),
        ("app.kubernetes.io/name", "app.kubernetes.io/name"),
        ("k8s", "k8s"),
    ],
)
def test_smart_labels(field: str, label: str) -> None:
    assert smart_label(field) == label


def test_tabwriter_aligns_runs_of_lines_like_go() -> None:
    text = tabwrite(["A:\t1", "Longer:\t2", "Break:", "  X:\t3", "Table:", "  a\tbb\tc", "  aaaa\tb\tc"])
    assert text.splitlines() == [
        "A:       1",
        "Longer:  2",
        "Break:",
        "  X:  3",
        "Table:",
        "  a     bb  c",
        "  aaaa  b   c",
    ]


def test_describe_cluster_with_conditions_and_events() -> None:
    cluster = load(CLUSTER)
    cluster.metadata.uid = "5f0c"
    cluster.metadata.resource_version = "42"
    cluster.metadata.generation = 2
    cluster.metadata.finalizers.append("karmada.io/cluster-controller")
    cluster.metadata.annotations["note"] = "first\nsecond"
    events = [event("ClusterNotReady", "cluster is not ready", count=2, first=TWO_HOURS_AGO, last=FIVE_MINUTES_AGO)]
    text = describe(registry.CLUSTER, cluster, events, NOW)
    out = text.splitlines()
    assert out[:5] == ["Name:         member1", "Labels:       env=prod", "Annotations:  note:",
                       "                first", "                second"]
    assert "Namespace:" not in text  # cluster-scoped
    for line in [
        "API Version:  cluster.karmada.io/v1alpha1",
        "Kind:         Cluster",
        "Metadata:",
        "  Creation Timestamp:  2026-03-01T11:55:00Z",
        "  Finalizers:",
        "    karmada.io/cluster-controller",
        "  Generation:        2",
        "  Resource Version:  42",
        "  UID:               5f0c",
        "Spec:",
        "  API Endpoint:  https://10.0.0.1:6443",
        "  Sync Mode:     Push",
        "Status:",
        "  Kubernetes Version:  v1.29.2",
    ]:
        assert line in out, line
    conditions = out[out.index("Conditions:") + 1 :][:3]
    assert [row.split() for row in conditions] == [
        ["Type", "Status", "Reason", "LastTransitionTime", "Age", "Message"],
        ["----", "------", "------", "------------------", "---", "-------"],
        ["Ready", "False", "ClusterNotReachable", FIVE_MINUTES_AGO, "5m", "cluster", "is", "not", "reachable"],
    ]
    # Conditions are shown once, as the table, not again under Status.
    assert "Last Transition Time" not in text
    assert out[-4:] == [
        "Events:",
        "  Type     Reason           Age                From                       Message",
        "  ----     ------           ----               ----                       -------",
        "  Warning  ClusterNotReady  5m (x2 over 120m)  cluster-status-controller  cluster is not ready",
    ]


def test_describe_deployment_template() -> None:
    rt = registry.lookup("deployment")
    text = describe(rt, load(DEPLOYMENT), [], NOW)
    out = text.splitlines()
    assert out[:4] == [
        "Name:         nginx", "Namespace:    default", "Labels:       app=nginx", "Annotations:  <none>",
    ]
    for line in ["API Version:  apps/v1", "Kind:         Deployment", "  Replicas:  3", "    Match Labels:",
                 "      app:  nginx", "        Image:  nginx:1.25", "  Available Replicas:  2",
                 "  Ready Replicas:      2"]:
        assert line in out, line
    assert out[-1].split() == ["Events:", "<none>"]
    conditions = out.index("Conditions:")
    assert out[conditions + 3].split()[:5] == ["Available", "True", "MinimumReplicasAvailable", TWO_HOURS_AGO, "120m"]


def test_describe_secret_shows_sizes_not_values() -> None:
    secret = load("""
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: default}
data: {username: YWRtaW4=}
stringData: {password: hunter2}
""")
    text = describe(registry.lookup("secret"), secret, [], NOW)
    assert "YWRtaW4=" not in text and "hunter2" not in text
    assert "  username:  5 bytes" in text.splitlines()


def test_describe_prints_scripts_as_blocks() -> None:
    ric = load("""
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: health}
spec:
  target: {apiVersion: apps/v1, kind: Deployment}
  customizations:
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          return true
        end
""")
    out = describe(registry.RESOURCE_INTERPRETER_CUSTOMIZATION, ric, [], NOW).splitlines()
    at = out.index("      Lua Script:")
    assert out[at + 1 : at + 4] == ["        function InterpretHealth(obj)", "          return true", "        end"]


@pytest.mark.parametrize("kind", ["rb", "crb"])
def test_describe_binding_shows_its_failover_history(kind: str) -> None:
    namespace = "  namespace: default\n" if kind == "rb" else ""
    binding = load(f"""
apiVersion: work.karmada.io/v1alpha2
kind: {"ResourceBinding" if kind == "rb" else "ClusterResourceBinding"}
metadata:
  name: nginx-deployment
{namespace}spec:
  resource: {{apiVersion: apps/v1, kind: Deployment, name: nginx}}
  clusters: [{{name: member1, replicas: 3}}]
status:
  failoverHistory:
  - {{time: "2026-03-01T11:00:00Z", fromCluster: member1, toClusters: [member2], reason: TaintUntolerated,
      producer: TaintManager, recoveredTime: "2026-03-01T11:00:12.300Z",
      clustersBefore: [{{name: member1, replicas: 3}}], failedBackTime: "2026-03-01T11:30:00Z"}}
  - {{time: "2026-03-01T11:50:00Z", fromCluster: member1, toClusters: [member2, member3],
      reason: ApplicationFailure, producer: ApplicationFailover}}
""")
    out = describe(registry.lookup(kind), binding, [], NOW).splitlines()
    start = out.index("Failover history:")
    assert [line.split() for line in out[start + 1:start + 5]] == [
        ["TIME", "FROM", "TO", "REASON", "PRODUCER", "RECOVERY"],
        ["----", "----", "--", "------", "--------", "--------"],
        ["2026-03-01T11:00:00Z", "member1", "member2", "TaintUntolerated", "TaintManager", "12.3s", "(failed",
         "back", "2026-03-01T11:30:00Z)"],
        ["2026-03-01T11:50:00Z", "member1", "member2,member3", "ApplicationFailure", "ApplicationFailover", "-"],
    ]
    # The table replaces the generic field dump.
    assert not any("Failover History" in line for line in out)
    assert out[-1].split() == ["Events:", "<none>"]


def test_describe_binding_without_history_has_no_table() -> None:
    binding = load("""
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: nginx-deployment, namespace: default}
spec: {resource: {apiVersion: apps/v1, kind: Deployment, name: nginx}}
""")
    assert "Failover history:" not in describe(registry.lookup("rb"), binding, [], NOW)
