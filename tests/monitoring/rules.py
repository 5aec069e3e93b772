"""What the monitoring tests share: the rules file, the dashboard's expressions, Debian's
prometheus and promtool (each test that needs them is skipped, with the reason, where they are
not installed), and the rules an e2e evaluates in seconds instead of hours."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

RULES = ROOT / "deploy" / "prometheus" / "flotilla-rules.yaml"
RULE_TESTS = ROOT / "tests" / "monitoring" / "flotilla-rules.test.yaml"
PROMETHEUS_RULE = ROOT / "deploy" / "k8s" / "components" / "monitoring" / "prometheus-rule.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "flotilla-failover.json"
ALERTS_DOC = ROOT / "docs" / "alerts.md"

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: apt-get install "
                                                             "prometheus)")
needs_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (Debian: apt-get "
                                                                 "install prometheus)")


def load_rules(path: Path = RULES) -> dict[str, Any]:
    rules = yaml.safe_load(path.read_text())
    assert isinstance(rules, dict)
    return rules


def rules_of(rules: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in rules["groups"] for rule in group["rules"]]


def alert_names(rules: dict[str, Any]) -> list[str]:
    return [r["alert"] for r in rules_of(rules) if "alert" in r]


def record_names(rules: dict[str, Any]) -> list[str]:
    return [r["record"] for r in rules_of(rules) if "record" in r]


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, expression) of every target of the Grafana dashboard."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p["targets"]]


# -- The rules an e2e evaluates in seconds ----------------------------------------------------
#
# The shipped rules, with each window a few seconds long (scraped every second, a window still
# holds a few samples; each alert's long window stays longer than its short one), every `for:`
# 2 s, and the SLO's limit 1 s instead of 300 s, so that a demo plane's failover misses it and
# the SLO's alerts fire too: the demo's new pod is ready 1 s after it starts, which is after the
# eviction.
E2E_WINDOWS = {"5m": "4s", "30m": "6s", "1h": "8s", "6h": "8s", "3d": "10s"}
E2E_FOR = "2s"
SLO_BUCKET, E2E_SLO_BUCKET = 'le="300.0"', 'le="1.0"'
_WINDOW = re.compile(r"\[(\w+)\]|offset (\w+)")


def _shorter(expr: str) -> str:
    def swap(match: re.Match[str]) -> str:
        window = match.group(1) or match.group(2)
        assert window in E2E_WINDOWS, f"no e2e length for the window {window} of {expr!r}"
        short = E2E_WINDOWS[window]
        return f"[{short}]" if match.group(1) else f"offset {short}"

    return _WINDOW.sub(swap, expr).replace(SLO_BUCKET, E2E_SLO_BUCKET)


def for_e2e(rules: dict[str, Any]) -> dict[str, Any]:
    """The shipped rules on the e2e's time scale (see above); names, labels and annotations kept."""
    groups = []
    for group in rules["groups"]:
        shortened = []
        for rule in group["rules"]:
            rule = {**rule, "expr": _shorter(rule["expr"])}
            if "for" in rule:
                rule["for"] = E2E_FOR
            shortened.append(rule)
        groups.append({**group, "rules": shortened})
    return {**rules, "groups": groups}
