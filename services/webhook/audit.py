"""The audit log: one JSON line per request to the plane's API, allowed or denied, with who
asked (user and groups), what (verb, API group, resource, namespace, name) and why the answer.

Written to a file (`flotilla up`: `<data-dir>/logs/audit.log`) or, with `-`, to stdout (in a
pod, where the cluster's log collection takes it), through a logger of its own so that no
other log line lands in it.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from flotilla.aio.clock import Clock
from flotilla.security.rbac import Decision, Request, User

STDOUT = "-"


class AuditLog:
    def __init__(self, path: str, clock: Clock) -> None:
        self.clock = clock
        self.logger = logging.getLogger(f"flotilla.audit.{id(self)}")
        self.logger.propagate = False
        self.logger.setLevel(logging.INFO)
        handler: logging.Handler
        if path == STDOUT:
            handler = logging.StreamHandler(sys.stdout)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        self.logger.addHandler(handler)

    def record(self, method: str, user: User, request: Request, decision: Decision) -> None:
        self.logger.info(json.dumps({
            "time": self.clock.now().isoformat(),
            "method": method,
            "user": user.name,
            "groups": sorted(user.groups),
            "verb": request.verb,
            "apiGroup": request.api_group,
            "resource": request.combined_resource,
            "namespace": request.namespace,
            "name": request.name,
            "decision": "allow" if decision.allowed else "deny",
            "reason": decision.reason,
        }, sort_keys=False))

    def close(self) -> None:
        for handler in list(self.logger.handlers):
            handler.close()
            self.logger.removeHandler(handler)
