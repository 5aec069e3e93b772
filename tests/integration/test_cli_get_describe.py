"""`flotillactl get` and `describe` against a real etcd, run in-process through `main()`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from flotilla.api import codec, conditions
from flotilla.cli import main as cli
from flotilla.store import Store
from flotilla.store.embedded import EmbeddedEtcd
from flotilla.store.events import EventRecorder
from tests.factories import make_cluster

Run = Callable[..., Awaitable[tuple[int, str, str]]]


@pytest.fixture
def run(etcd: EmbeddedEtcd, capsys: pytest.CaptureFixture[str]) -> Run:
    """`flotillactl ARGS…` against the test etcd: (exit code, stdout, stderr)."""

    async def invoke(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        # main() runs its own event loop, so it gets a thread of its own.
        code = await asyncio.to_thread(cli.main, ["--etcd-endpoints", etcd.endpoint, *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def parse(doc: str) -> Any:
    (data,) = codec.load_yaml_documents(doc)
    return codec.from_dict(data)


def deployment(name: str, namespace: str = "default", replicas: int = 3, ready: int = 0, app: str = "nginx") -> Any:
    return parse(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}, labels: {{app: {app}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {app}}}}}
  template: {{spec: {{containers: [{{name: {name}, image: nginx}}]}}}}
status: {{readyReplicas: {ready}, updatedReplicas: {replicas}, availableReplicas: {ready}}}
""")


def policy(name: str, namespace: str) -> Any:
    return parse(f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  conflictResolution: Overwrite
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: nginx}}]
""")


async def ready_cluster(store: Store, name: str, status: str = "True") -> Any:
    created = await store.create(make_cluster(name))

    def mark(cluster: Any) -> None:
        cluster.status.kubernetes_version = "v1.29.2"
        conditions.set_condition(cluster.status.conditions, "Ready", status, "ClusterReady", "cluster is healthy",
                                 datetime.now(UTC))

    await store.mutate(type(created), "", name, mark, status=True)
    return created


async def test_get_clusters_table(store: Store, run: Run) -> None:
    await ready_cluster(store, "member1")
    await ready_cluster(store, "member2", status="False")
    code, out, err = await run("get", "clusters")
    assert (code, err) == (0, "")
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "VERSION", "MODE", "READY", "AGE"]
    # make_cluster leaves syncMode empty: MODE is blank, so four cells remain.
    assert [row[:3] for row in rows[1:]] == [["member1", "v1.29.2", "True"], ["member2", "v1.29.2", "False"]]
    assert all(row[3].endswith("s") for row in rows[1:])
    code, out, _ = await run("get", "cluster", "member2", "-o", "wide")
    assert code == 0 and "https://member2.example:6443" in out and "member1" not in out


async def test_get_policies_by_namespace(store: Store, run: Run) -> None:
    await store.create(policy("nginx", "shop"))
    await store.create(policy("other", "tools"))
    code, out, _ = await run("get", "pp", "-n", "shop")
    assert code == 0
    assert [line.split()[:3] for line in out.splitlines()] == [
        ["NAME", "CONFLICT-RESOLUTION", "PRIORITY"], ["nginx", "Overwrite", "0"],
    ]
    code, out, err = await run("get", "propagationpolicies")
    assert (code, out, err) == (0, "", "No resources found in default namespace.\n")
    code, out, _ = await run("get", "pp", "-A")
    assert [line.split()[:2] for line in out.splitlines()] == [
        ["NAMESPACE", "NAME"], ["shop", "nginx"], ["tools", "other"],
    ]


async def test_get_bindings_by_short_name(store: Store, run: Run) -> None:
    rb = parse("""
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: nginx-deployment, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: nginx, namespace: default}
  clusters: [{name: member1, replicas: 1}, {name: member2, replicas: 2}]
""")
    await store.create(rb)
    code, out, _ = await run("get", "rb")
    assert code == 0
    assert out.splitlines()[0].split() == ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"]
    assert out.splitlines()[1].split()[0] == "nginx-deployment"
    code, out, _ = await run("get", "rb/nginx-deployment", "-o", "wide")
    assert code == 0 and "member1:1,member2:2" in out


async def test_json_and_yaml_of_a_list_and_of_one(store: Store, run: Run) -> None:
    await ready_cluster(store, "member1")
    await ready_cluster(store, "member2")
    code, out, _ = await run("get", "clusters", "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["kind"] == "List"
    assert [i["metadata"]["name"] for i in data["items"]] == ["member1", "member2"]
    assert data["items"][0]["status"]["conditions"][0]["type"] == "Ready"
    code, out, _ = await run("get", "clusters", "member1", "-o", "json")
    assert json.loads(out)["metadata"]["name"] == "member1"
    code, out, _ = await run("get", "clusters", "member1", "-o", "yaml")
    assert out.startswith("apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\n")
    # An empty list is still a list for scripts, with nothing on stderr.
    code, out, err = await run("get", "works", "-A", "-o", "json")
    assert (code, json.loads(out)["items"], err) == (0, [], "")


async def test_get_deployment_templates_with_a_selector(store: Store, run: Run) -> None:
    await store.create(deployment("nginx", ready=2))
    await store.create(deployment("api", app="api", replicas=1, ready=1))
    await store.create(deployment("nginx", namespace="shop"))
    code, out, _ = await run("get", "deployments")
    rows = [line.split() for line in out.splitlines()]
    assert code == 0
    assert [row[:4] for row in rows] == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE"], ["api", "1/1", "1", "1"], ["nginx", "2/3", "3", "2"],
    ]
    code, out, _ = await run("get", "deploy", "-A", "-l", "app=nginx")
    assert [line.split()[:3] for line in out.splitlines()] == [
        ["NAMESPACE", "NAME", "READY"], ["default", "nginx", "2/3"], ["shop", "nginx", "0/3"],
    ]


async def test_custom_kinds_resolve_through_stored_crds(store: Store, run: Run) -> None:
    await store.create(parse("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: flinkdeployments.flink.apache.org}
spec:
  group: flink.apache.org
  scope: Namespaced
  names: {kind: FlinkDeployment, plural: flinkdeployments, singular: flinkdeployment, shortNames: [flinkdep]}
  versions: [{name: v1beta1, served: true, storage: true}]
"""))
    await store.create(parse("""
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: wordcount, namespace: default}
spec: {parallelism: 2}
"""))
    code, out, _ = await run("get", "flinkdep")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["NAME", "wordcount"]
    code, out, _ = await run("describe", "flinkdeployments.flink.apache.org", "wordcount")
    assert code == 0 and "  Parallelism:  2" in out.splitlines()


async def test_missing_objects_and_bad_input_are_one_line_errors(store: Store, run: Run) -> None:
    for argv, message in [
        (("get", "clusters", "nope"), 'error: clusters "nope" not found'),
        (("describe", "rb", "nope", "-n", "shop"), 'error: resourcebindings "nope" not found'),
        (("get", "widgets"), 'error: the server doesn\'t have a resource type "widgets"'),
        (("get", "deploy", "-l", "app!=web"), "error: unsupported label selector"),
        (("get", "clusters", "-o", "table"), 'error: unable to match a printer suitable for the output format "table"'),
    ]:
        code, out, err = await run(*argv)
        assert (code, out) == (1, ""), argv
        assert err.startswith(message) and err.count("\n") == 1, err


async def test_describe_cluster_shows_conditions_and_events(store: Store, run: Run) -> None:
    cluster = await ready_cluster(store, "member1", status="False")
    recorder = EventRecorder(store, "test")
    await recorder.warning(cluster, "ClusterNotReady", "cluster member1 is not ready")
    await recorder.warning(cluster, "ClusterNotReady", "cluster member1 is not ready")
    code, out, err = await run("describe", "cluster", "member1")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["Name:", "member1"]
    assert "  API Endpoint:  https://member1.example:6443" in lines
    at = lines.index("Conditions:")
    assert lines[at + 3].split()[:3] == ["Ready", "False", "ClusterReady"]
    at = lines.index("Events:")
    assert lines[at + 1].split() == ["Type", "Reason", "Age", "From", "Message"]
    event = lines[at + 3].split()
    assert event[:2] == ["Warning", "ClusterNotReady"] and "(x2" in event and "test" in event
    assert lines[at + 3].endswith("cluster member1 is not ready")
