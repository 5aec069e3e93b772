"""Through the session webhook and `flotillactl apply`: a Karmada field without effect is applied
with kubectl's `Warning: <path>: <why>` line on stderr; a field or kind Flotilla does not build
is refused, naming it, and nothing is written."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from flotilla.store.embedded import EmbeddedEtcd
from tests.admission_cases import CLUSTER, DIVIDED
from tests.conftest import CtlResult

WARNED_POLICY = DIVIDED.replace("spec:\n", "spec:\n  association: true\n", 1)
REFUSED_POLICY = DIVIDED.replace("spec:\n", "spec:\n  dependentOverrides:\n    - nginx-override\n", 1)
QUOTA = """\
apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata:
  name: team-a
  namespace: default
spec:
  overall:
    cpu: "10"
"""


def test_apply_prints_a_warning_for_a_field_without_effect(
        webhook: subprocess.Popen[bytes], clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    assert WARNED_POLICY != DIVIDED
    applied = ctl("apply", "-f", "-", stdin=WARNED_POLICY)
    assert applied.code == 0, applied.err
    assert applied.out == "propagationpolicy/nginx-propagation created\n"
    assert applied.err == ("Warning: spec.association: deprecated in Karmada, which no longer reads it; "
                           "propagateDeps propagates dependencies\n")
    # Without the field: no warning.
    again = ctl("apply", "-f", "-", stdin=CLUSTER)
    assert (again.code, again.err) == (0, "")


def test_apply_refuses_a_field_and_a_kind_flotilla_does_not_build(
        webhook: subprocess.Popen[bytes], clean_etcd: EmbeddedEtcd, ctl: Callable[..., CtlResult]) -> None:
    refused = ctl("apply", "-f", "-", stdin=REFUSED_POLICY + "---\n" + QUOTA)
    assert refused.code == 1 and refused.out == ""
    lines = refused.err.splitlines()
    assert lines[0].startswith("error: propagationpolicy/nginx-propagation: spec.dependentOverrides: "
                               "not supported by Flotilla: spec.dependentOverrides (")
    assert lines[1] == ("error: federatedresourcequota/team-a: kind: FederatedResourceQuota (policy.karmada.io) "
                        "is not supported by Flotilla")
    assert ctl("get", "pp", "-A").out.count("nginx-propagation") == 0
