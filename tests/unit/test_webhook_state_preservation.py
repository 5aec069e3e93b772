"""Admission of statePreservation rules: a JSONPath outside Kubernetes' grammar (a regular
expression, jsonpath-ng's sub() and other functions) and an aliasLabelName that is no label key
are refused at the rule's field, for application and cluster failover, PropagationPolicy and
ClusterPropagationPolicy alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.admission_cases import APP_FAILOVER, STATE_PRESERVATION, admit, parse_document

NOW = datetime(2026, 11, 22, 3, 13, 39, tzinfo=UTC)
CLUSTER_RULES = "spec.failover.cluster.statePreservation.rules"
APPLICATION_RULES = "spec.failover.application.statePreservation.rules"


def cluster_policy(json_path: str, alias: str = "application.karmada.io/cluster-failover-jobid",
                   kind: str = "PropagationPolicy") -> str:
    # A JSON string is a YAML double-quoted scalar: any JSONPath goes in as it is.
    text = STATE_PRESERVATION.replace('"{ .jobStatus.jobID }"', json.dumps(json_path)).replace(
        "application.karmada.io/cluster-failover-jobid", alias)
    if kind == "ClusterPropagationPolicy":
        text = text.replace("kind: PropagationPolicy", "kind: ClusterPropagationPolicy").replace(
            "  namespace: default\n", "", 1)
    return text


def application_policy(json_path: str, alias: str = "application.karmada.io/failover-jobid") -> str:
    return APP_FAILOVER.replace(
        "      gracePeriodSeconds: 600\n",
        "      gracePeriodSeconds: 600\n      statePreservation:\n        rules:\n"
        "          - aliasLabelName: job\n            jsonPath: '{ .jobStatus.jobID }'\n"
        f"          - aliasLabelName: {alias}\n            jsonPath: {json.dumps(json_path)}\n")


def errors(text: str) -> list[str]:
    return [str(e) for e in admit(parse_document(text), now=NOW)[1]]


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
@pytest.mark.parametrize("json_path", [
    "{ .jobStatus.jobID }",
    '{.conditions[?(@.type=="Ready")].status}',
    "{.items[0].name}",
    "{..jobID}",
    "{.labels['app.kubernetes.io/name']}",
])
def test_kubernetes_jsonpath_is_admitted(json_path: str, kind: str) -> None:
    assert errors(cluster_policy(json_path, kind=kind)) == []
    assert errors(application_policy(json_path)) == []


REFUSED = [
    ('{.items[?(@.name =~ "^a.*")].id}', "regular expressions (=~) are not supported"),
    ("{$.jobStatus.`sub(/-/, _)`}", "jsonpath-ng extensions (`...`) are not supported"),
    ("{.jobStatus.sub(/-/, _)}", "function calls (sub(...)) are not supported"),
    ("{.items[?(@.a + 1 > 2)].id}", "arithmetic is not supported"),
    ("{range .items[*]}{.id}{end}", "single JSONPath expression"),
]


@pytest.mark.parametrize(("json_path", "reason"), REFUSED, ids=[r for _, r in REFUSED])
def test_a_jsonpath_outside_kubernetes_grammar_is_refused_at_its_field(json_path: str, reason: str) -> None:
    (cluster,) = errors(cluster_policy(json_path))
    assert cluster.startswith(f"{CLUSTER_RULES}[0].jsonPath: invalid value ") and reason in cluster, cluster
    (cpp,) = errors(cluster_policy(json_path, kind="ClusterPropagationPolicy"))
    assert cpp == cluster
    # The second rule of the application's: the index says which.
    (application,) = errors(application_policy(json_path))
    assert application.startswith(f"{APPLICATION_RULES}[1].jsonPath: invalid value ") and reason in application


@pytest.mark.parametrize("alias", ['"job id"', "Example.com/job", "a/b/c", '"-job"'])
def test_an_alias_that_is_no_label_key_is_refused_at_its_field(alias: str) -> None:
    (cluster,) = errors(cluster_policy("{ .jobStatus.jobID }", alias=alias))
    assert cluster.startswith(f"{CLUSTER_RULES}[0].aliasLabelName: invalid value"), cluster
    (application,) = errors(application_policy("{ .jobStatus.jobID }", alias=alias))
    assert application.startswith(f"{APPLICATION_RULES}[1].aliasLabelName: invalid value"), application
