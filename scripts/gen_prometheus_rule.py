#!/usr/bin/env python3
"""Write deploy/k8s/components/monitoring/prometheus-rule.yaml, the Prometheus Operator's
PrometheusRule, from deploy/prometheus/flotilla-rules.yaml (`--check`: fail when it is stale).

The plain rules file is the one source: the PrometheusRule carries its groups unchanged, so
both install the same alerts (docs/alerts.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "flotilla-rules.yaml"
OUT = ROOT / "deploy" / "k8s" / "components" / "monitoring" / "prometheus-rule.yaml"

HEADER = """\
# Flotilla's alerts and failover SLO for the Prometheus Operator: the groups of
# deploy/prometheus/flotilla-rules.yaml, written by scripts/gen_prometheus_rule.py. Do not edit:
# change that file and run the script. docs/alerts.md.
"""


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Expressions stay readable: a multi-line string as a literal block, as in the rules file.
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def render() -> str:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rule: dict[str, Any] = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "flotilla",
            "namespace": "flotilla-system",
            "labels": {
                "app.kubernetes.io/name": "flotilla",
                "app.kubernetes.io/component": "monitoring",
                "app.kubernetes.io/part-of": "flotilla",
                "app.kubernetes.io/version": "0.1.0",
            },
        },
        "spec": {"groups": groups},
    }
    return HEADER + yaml.dump(rule, Dumper=_Dumper, sort_keys=False, width=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run scripts/gen_prometheus_rule.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
