"""deploy/prometheus/flotilla-rules.yaml (issue 37): promtool finds it valid and its unit tests
(flotilla-rules.test.yaml) pass, with a firing and a quiet case for every alert and a value for
every recording rule; the PrometheusRule is generated from it; every alert has its runbook in
docs/alerts.md and its line in README.md; the rules and the dashboard read only metrics the code
defines, and every dashboard expression is valid PromQL; the e2e's shortened rules keep every
rule."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.monitoring.rules import (
    ALERTS_DOC,
    E2E_FOR,
    PROMTOOL,
    RULE_TESTS,
    RULES,
    alert_names,
    dashboard_expressions,
    for_e2e,
    load_rules,
    needs_promtool,
    record_names,
    rules_of,
)
from tests.unit.test_metrics import defined_samples

pytestmark = pytest.mark.timeout(60)


def promtool(*args: str, cwd: Path = ROOT) -> str:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=50)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@needs_promtool
def test_promtool_finds_the_rules_valid() -> None:
    rules = load_rules()
    out = promtool("check", "rules", str(RULES))
    assert f"SUCCESS: {len(rules_of(rules))} rules found" in out, out


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)


def test_every_alert_is_tested_firing_and_quiet_and_every_recording_rule_for_its_value() -> None:
    rules = load_rules()
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    firing = {c["alertname"] for t in cases for c in t.get("alert_rule_test", []) if c["exp_alerts"]}
    quiet = {c["alertname"] for t in cases for c in t.get("alert_rule_test", []) if not c["exp_alerts"]}
    valued = {c["expr"] for t in cases for c in t.get("promql_expr_test", []) if c["exp_samples"]}
    alerts = set(alert_names(rules))
    assert alerts - firing == set(), "alerts never tested firing"
    assert alerts - quiet == set(), "alerts never tested quiet"
    assert set(record_names(rules)) - valued == set(), "recording rules never tested for a value"
    assert (firing | quiet) <= alerts, "cases for alerts the rules do not have"


def test_the_prometheus_rule_is_generated_from_the_rules_file() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_prometheus_rule.py"), "--check"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_every_alert_has_a_runbook_in_docs_and_a_line_in_the_readme() -> None:
    doc = ALERTS_DOC.read_text()
    readme = (ROOT / "README.md").read_text()
    readme_alerts = readme.split("### Alerts", 1)[1].split("\n## ", 1)[0]
    assert "(docs/alerts.md)" in readme_alerts
    headings = re.findall(r"^### (\w+)$", doc, re.MULTILINE)
    for rule in rules_of(load_rules()):
        if "alert" not in rule:
            continue
        name = rule["alert"]
        assert rule["annotations"]["runbook_url"] == f"docs/alerts.md#{name.lower()}", name
        assert name in headings, f"docs/alerts.md has no runbook section for {name}"
        section = doc.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        for part in ("**Meaning.**", "**Why it fires.**", "**What to do.**"):
            assert part in section, f"{name}'s runbook has no {part}"
        assert f"`{name}`" in readme_alerts, f"README.md's Alerts does not list {name}"
        assert {"summary", "description"} <= rule["annotations"].keys(), name
        assert rule["labels"]["severity"] in ("critical", "warning"), name


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads (recording rules' names, with colons, excepted)."""
    return set(re.findall(r"\b(?:flotilla_[a-z0-9_]+|grpc_server_handled_total)\b(?![:(])", expr))


def test_the_rules_and_the_dashboard_read_only_metrics_that_exist() -> None:
    defined = defined_samples()
    exprs = [r["expr"] for r in rules_of(load_rules())] + [e for _, e in dashboard_expressions()]
    read = {name for expr in exprs for name in metric_names(expr)}
    # etcd's, not Flotilla's.
    missing = sorted(read - defined - {"grpc_server_handled_total"})
    assert not missing, f"read by the rules or the dashboard, defined by no code: {missing}"
    assert {"flotilla_leader_election_master_status", "flotilla_service_serving", "flotilla_eviction_tasks_overdue",
            "flotilla_eviction_blocked_bindings", "flotilla_taint_manager_held_evictions"} <= read


@needs_promtool
def test_every_dashboard_expression_is_valid_promql(tmp_path: Path) -> None:
    exprs = dashboard_expressions()
    as_rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expression_{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]}]}
    path = tmp_path / "dashboard.yaml"
    path.write_text(yaml.safe_dump(as_rules))
    assert f"SUCCESS: {len(exprs)} rules found" in promtool("check", "rules", str(path))


@needs_promtool
def test_the_e2e_rules_are_the_shipped_rules_in_seconds(tmp_path: Path) -> None:
    """Every rule kept, with the same names, labels and annotations; no window or `for:` longer than
    a few seconds; the SLO's bucket swapped; promtool finds them valid."""
    shipped, short = load_rules(), for_e2e(load_rules())

    def identity(rule: dict[str, Any]) -> tuple[Any, ...]:
        return rule.get("alert"), rule.get("record"), rule.get("labels"), rule.get("annotations")

    assert [identity(r) for r in rules_of(short)] == [identity(r) for r in rules_of(shipped)]
    for rule in rules_of(short):
        assert not re.search(r"\[\d+[mhd]\]|offset \d+[mhd]|le=\"300\.0\"", rule["expr"]), rule["expr"]
        assert rule.get("for", E2E_FOR) == E2E_FOR
    path = tmp_path / "e2e-rules.yaml"
    path.write_text(yaml.safe_dump(short))
    promtool("check", "rules", str(path))
