"""Karmada's samples/nginx (Deployment, PropagationPolicy, OverridePolicy) applied unchanged
with flotillactl: each member's nginx carries what the OverridePolicy gives its cluster — the
labels on member2's, the annotations on member1's (issue 36: none of them reached a member)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.e2e.planes import BIN, flotilla_up
from tests.e2e.test_propagation import eventually

# karmada-io/karmada samples/nginx: deployment.yaml, propagationpolicy.yaml, overridepolicy.yaml, verbatim.
SAMPLES_NGINX = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  replicas: 2
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx
        name: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
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
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - targetCluster:
              clusterNames:
                - member1
            weight: 1
          - targetCluster:
              clusterNames:
                - member2
            weight: 1
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata:
  name: nginx-op
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  overrideRules:
    - targetCluster:
        clusterNames:
          - member2
      overriders:
        labelsOverrider:
          - operator: add
            value:
              env: skoala-dev
          - operator: add
            value:
              env-stat: skoala-stage
          - operator: remove
            value:
              for: for
          - operator: replace
            value:
              bar: test
    - targetCluster:
        clusterNames:
          - member1
      overriders:
        annotationsOverrider:
          - operator: add
            value:
              env: skoala-stage
          - operator: remove
            value:
              bom: bom
          - operator: replace
            value:
              emma: sophia
"""


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with flotilla_up(tmp_path_factory, 2) as (data_dir, endpoints):
        yield {"FLOTILLA_ETCD_ENDPOINTS": endpoints, "data_dir": str(data_dir)}


def ctl(plane: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "flotillactl"), "--etcd-endpoints", plane["FLOTILLA_ETCD_ENDPOINTS"], *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_samples_nginx_puts_each_clusters_overrides_on_its_member(plane: dict[str, str], tmp_path: Path) -> None:
    samples = tmp_path / "samples-nginx.yaml"
    samples.write_text(SAMPLES_NGINX)
    applied = ctl(plane, "apply", "-f", str(samples))
    assert applied.returncode == 0, applied.stderr
    assert "overridepolicy/nginx-op created" in applied.stdout, applied.stdout
    listed = ctl(plane, "get", "op", "-n", "default")
    assert listed.returncode == 0 and "nginx-op" in listed.stdout, listed.stderr

    def members() -> dict[str, dict[str, Any]]:
        result = ctl(plane, "member", "get", "deployments", "--clusters", "member1,member2", "-o", "json")
        if result.returncode != 0:
            return {}
        return {i["cluster"]: i["metadata"] for i in json.loads(result.stdout)["items"]
                if i["metadata"]["name"] == "nginx"}

    def overridden() -> dict[str, dict[str, Any]] | None:
        found = members()
        if set(found) != {"member1", "member2"}:
            return None
        m1, m2 = found["member1"], found["member2"]
        labels2, annotations1 = m2.get("labels", {}), m1.get("annotations", {})
        if labels2.get("env") == "skoala-dev" and annotations1.get("env") == "skoala-stage":
            return found
        return None

    found = eventually(overridden, timeout=30, what="each member's overrides")
    assert found["member2"]["labels"]["env-stat"] == "skoala-stage"
    assert "env" not in found["member1"].get("labels", {})
    assert "env" not in found["member2"].get("annotations", {})
    work = ctl(plane, "get", "work", "-n", "karmada-es-member2", "-o", "json")
    assert work.returncode == 0, work.stderr
    assert "policy.karmada.io/applied-overrides" in work.stdout
