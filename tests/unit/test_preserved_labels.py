"""Preserved labels checked before a manifest carries them (flotilla/rules/preserved_labels.py):
label values and keys as Kubernetes checks them, which labels are left out, and the
StatePreservationFailed condition that names the rule and the value."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flotilla.api.conditions import get_condition
from flotilla.api.limits import MAX_MESSAGE_BYTES
from flotilla.api.v1 import meta_pb2, work_pb2
from flotilla.api.wellknown import STATE_PRESERVATION_FAILED_CONDITION
from flotilla.rules.preserved_labels import (
    INVALID_LABEL_KEY,
    INVALID_LABEL_VALUE,
    Refused,
    failure,
    label_key_problems,
    label_value_problems,
    reported,
    rule_of,
    set_failed_condition,
    split_labels,
)
from services.webhook.rules import names

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
JOB = "application.karmada.io/cluster-failover-jobid"

LABEL_VALUES = [
    ("", []),
    ("a", []),
    ("4f1d2c", []),
    ("j-42_x.y", []),
    ("x" * 63, []),
    ("x" * 64, ["must be no more than 63 characters"]),
    ("-a", ["alphanumeric"]),
    ("a-", ["alphanumeric"]),
    ("_a", ["alphanumeric"]),
    ("a.", ["alphanumeric"]),
    ("job id", ["alphanumeric"]),
    ("a/b", ["alphanumeric"]),
    ('{"jobID":"x"}', ["alphanumeric"]),
    ("caf\u00e9", ["alphanumeric"]),  # not ASCII
    ("\u0661", ["alphanumeric"]),  # an Arabic-Indic digit: isalnum, no label
    ("x?y", ["alphanumeric"]),  # a lone surrogate as extraction prints it
    (" " + "x" * 70, ["must be no more than 63 characters", "alphanumeric"]),
]


@pytest.mark.parametrize(("value", "problems"), LABEL_VALUES, ids=[v[:20] or "empty" for v, _ in LABEL_VALUES])
def test_label_value(value: str, problems: list[str]) -> None:
    found = label_value_problems(value)
    assert len(found) == len(problems)
    for problem, expected in zip(found, problems, strict=True):
        assert expected in problem
    # The same verdict as admission's (the regular expression of apimachinery's validation).
    assert bool(found) == bool(names.label_value(value))


LABEL_KEYS = [
    (JOB, True),
    ("jobid", True),
    ("example.com/a.b_c-d", True),
    ("a" * 63, True),
    ("a" * 64, False),
    ("Example.com/x", False),  # the prefix is a lowercase subdomain
    ("example..com/x", False),
    ("/x", False),
    ("example.com/", False),
    ("a/b/c", False),
    ("job id", False),
    ("", False),
    ("x" * 254 + "/a", False),
]


@pytest.mark.parametrize(("key", "valid"), LABEL_KEYS, ids=[k[:30] or "empty" for k, _ in LABEL_KEYS])
def test_label_key(key: str, valid: bool) -> None:
    assert (label_key_problems(key) == []) is valid
    assert (names.qualified_name(key) == []) is valid


def test_split_keeps_valid_labels_and_says_why_the_others_are_left_out() -> None:
    valid, refused = split_labels({JOB: "j 42", "ok": "fine", "bad key!": "v", "long": "x" * 100})
    assert valid == {"ok": "fine"}
    assert [(r.label, r.key_invalid) for r in refused] == [(JOB, False), ("bad key!", True), ("long", False)]
    assert refused[0].problems[0].startswith("not a valid label value: a valid label must be")
    assert refused[1].problems[0].startswith("not a valid label key: name part must be")
    assert refused[2].problems == ("not a valid label value: must be no more than 63 characters",)


def spec_with_rules() -> work_pb2.ResourceBindingSpec:
    spec = work_pb2.ResourceBindingSpec()
    spec.failover.cluster.state_preservation.rules.add(alias_label_name="other", json_path="{.x}")
    spec.failover.cluster.state_preservation.rules.add(alias_label_name=JOB, json_path="{ .jobStatus.jobID }")
    spec.failover.application.state_preservation.rules.add(alias_label_name=JOB, json_path="{.app.jobID}")
    return spec


@pytest.mark.parametrize(("producer", "label", "rule"), [
    ("TaintManager", JOB, 'spec.failover.cluster.statePreservation.rules[1] (jsonPath "{ .jobStatus.jobID }")'),
    ("ApplicationFailover", JOB, 'spec.failover.application.statePreservation.rules[0] (jsonPath "{.app.jobID}")'),
    ("ApplicationFailover", "other", 'spec.failover.cluster.statePreservation.rules[0] (jsonPath "{.x}")'),
    ("TaintManager", "nobody", ""),
])
def test_the_rule_that_made_a_label(producer: str, label: str, rule: str) -> None:
    assert rule_of(spec_with_rules(), producer, label) == rule


def test_the_failure_names_the_cluster_the_rule_the_label_and_the_value_cut_short() -> None:
    task = work_pb2.GracefulEvictionTask(from_cluster="member1", producer="TaintManager")
    value = "job:" + "y" * 200
    report = failure(spec_with_rules(), task, [Refused(JOB, value, ("not a valid label value: too long",))])
    assert report is not None
    reason, message = report
    assert reason == INVALID_LABEL_VALUE
    assert message == (
        "the state preserved from cluster member1 is applied without 1 label(s): "
        f'label "{JOB}" (rule spec.failover.cluster.statePreservation.rules[1] (jsonPath "{{ .jobStatus.jobID }}")): '
        f'value "job:{"y" * 60}"… (204 characters) is not a valid label value: too long')
    report = failure(spec_with_rules(), task, [Refused("a b", "v", ("not a valid label key: x",), True),
                                               Refused(JOB, "v w", ("not a valid label value: x",))])
    assert report is not None and report[0] == INVALID_LABEL_KEY
    assert failure(spec_with_rules(), task, []) is None


def test_the_message_stays_within_a_condition_message_size() -> None:
    task = work_pb2.GracefulEvictionTask(from_cluster="member1")
    many = [Refused(f"label-{i}", "x" * 300, ("not a valid label value: must be no more than 63 characters",))
            for i in range(100)]
    report = failure(work_pb2.ResourceBindingSpec(), task, many)
    assert report is not None and len(report[1].encode()) <= MAX_MESSAGE_BYTES


def test_the_condition_is_set_then_gone() -> None:
    conditions: list[meta_pb2.Condition] = []
    report = (INVALID_LABEL_VALUE, "why")
    assert not reported(conditions, report, 3)
    assert set_failed_condition(conditions, report, NOW, 3)
    condition = get_condition(conditions, STATE_PRESERVATION_FAILED_CONDITION)
    assert condition is not None
    assert (condition.status, condition.reason, condition.message, condition.observed_generation) == (
        "True", INVALID_LABEL_VALUE, "why", 3)
    assert reported(conditions, report, 3)
    assert not set_failed_condition(conditions, report, NOW, 3)
    assert not reported(conditions, None, 3)
    assert set_failed_condition(conditions, None, NOW, 3)
    assert conditions == [] and reported(conditions, None, 3)
