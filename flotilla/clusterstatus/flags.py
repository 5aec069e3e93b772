"""The status-collection flags, shared by the status service and the Pull-mode agent."""

from __future__ import annotations

import argparse
from datetime import timedelta

from flotilla.clusterstatus.thresholds import Thresholds
from flotilla.runtime.flags import duration


def add_status_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster-status-update-frequency", type=duration, default=duration("10s"),
                        help="how often each cluster is probed")
    parser.add_argument("--cluster-failure-threshold", type=duration, default=duration("30s"),
                        help="how long a failure must persist before Ready turns False")
    parser.add_argument("--cluster-success-threshold", type=duration, default=duration("30s"),
                        help="how long a recovery must persist before Ready turns True")
    parser.add_argument("--cluster-probe-timeout", type=duration, default=duration("5s"),
                        help="timeout of every call to a member cluster's API")
    parser.add_argument("--cluster-collect-period", type=duration, default=0.0,
                        help="how often a Ready cluster's version, API enablements and node and resource "
                             "summaries are collected again (0: at every probe)")


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    return Thresholds(
        success=timedelta(seconds=args.cluster_success_threshold),
        failure=timedelta(seconds=args.cluster_failure_threshold),
    )
