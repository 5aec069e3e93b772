"""An out-of-tree plugin package, pip-installed into a throwaway directory, found through its
entry point and filtering clusters — in the framework and through `flotillactl schedule`."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from flotilla.api import codec
from flotilla.cli import main as cli
from flotilla.cli.schedule import binding_from_documents
from flotilla.scheduler import core
from flotilla.scheduler.framework import Framework
from flotilla.scheduler.plugin_api import discover_plugins

PACKAGE = "flotilla_freeze_plugin"
PLUGIN = textwrap.dedent('''
    """Keeps new workloads off clusters in a change freeze (label freeze=true)."""

    from flotilla.scheduler.plugin_api import SUCCESS, Result

    FROZEN = Result.unschedulable("cluster(s) are in a change freeze")


    class FreezeWindow:
        name = "FreezeWindow"

        def filter(self, binding, cluster):
            if cluster.labels.get("freeze") == "true" and cluster.name not in binding.targets:
                return FROZEN
            return SUCCESS
''')
PYPROJECT = textwrap.dedent(f'''
    [build-system]
    requires = ["setuptools>=68"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "flotilla-freeze-plugin"
    version = "0.1.0"

    [project.entry-points."flotilla.scheduler.plugins"]
    FreezeWindow = "{PACKAGE}:FreezeWindow"
''')

CLUSTERS = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member1, labels: {freeze: "true"}}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: "8", pods: "110"}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member2}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {cpu: "8", pods: "110"}}
"""
WORKLOAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec: {replicas: 2, template: {spec: {containers: [{name: web, image: nginx}]}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("plugin-src")
    (source / PACKAGE).mkdir()
    (source / PACKAGE / "__init__.py").write_text(PLUGIN)
    (source / "pyproject.toml").write_text(PYPROJECT)
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True, capture_output=True, timeout=120,
    )
    return target


@pytest.fixture
def plugin_on_path(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(installed))
    yield installed
    sys.modules.pop(PACKAGE, None)


def test_entry_point_is_discovered(plugin_on_path: Path) -> None:
    found = discover_plugins()
    assert "FreezeWindow" in found
    assert "FreezeWindow" in Framework.build("*").names
    assert "FreezeWindow" not in Framework.build("*,-FreezeWindow").names


def test_installed_plugin_filters_clusters(plugin_on_path: Path) -> None:
    objects = [codec.from_dict(d) for d in codec.load_yaml_documents(CLUSTERS + "---\n" + WORKLOAD)]
    binding = binding_from_documents(objects)
    snapshot = core.Snapshot.of([o for o in objects if o.kind == "Cluster"], datetime.now(UTC))  # type: ignore[misc]
    decision = core.schedule(binding, snapshot, Framework.build("*"))
    assert decision.clusters == [("member2", 2)]
    assert [(u.cluster, u.plugin, u.reason) for u in decision.unfit] == [
        ("member1", "FreezeWindow", "cluster(s) are in a change freeze")]
    decision = core.schedule(binding, snapshot, Framework.build("*,-FreezeWindow"))
    assert decision.clusters == [("member1", 2), ("member2", 2)]


def test_flotillactl_schedule_runs_installed_plugins(plugin_on_path: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(CLUSTERS + "---\n" + WORKLOAD)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["schedule", "-f", str(path), "-o", "json"]) == 0
    result = json.loads(out.getvalue())
    assert result["clusters"] == [{"name": "member2", "replicas": 2}]
    assert result["filtered"] == [{"cluster": "member1", "plugin": "FreezeWindow",
                                   "reason": "cluster(s) are in a change freeze"}]
