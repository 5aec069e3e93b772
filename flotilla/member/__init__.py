"""Talking to member clusters through a real Kubernetes client: credentials from a kubeconfig,
health, discovery, server-side apply/get/list/delete, and Karmada's node/resource summaries."""

from flotilla.member.client import REQUEST_TIMEOUT, Health, MemberClient
from flotilla.member.credentials import Credentials, load_kubeconfig
from flotilla.member.errors import MemberError, MemberLimitExceeded
from flotilla.member.limits import LIMITS, Limits
from flotilla.member.summary import node_summary, resource_summary

__all__ = [
    "LIMITS",
    "REQUEST_TIMEOUT",
    "Credentials",
    "Health",
    "Limits",
    "MemberClient",
    "MemberError",
    "MemberLimitExceeded",
    "load_kubeconfig",
    "node_summary",
    "resource_summary",
]
