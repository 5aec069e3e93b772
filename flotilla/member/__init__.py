"""Talking to member clusters through a real Kubernetes client: credentials from a kubeconfig,
health, discovery, server-side apply/get/list/delete, and Karmada's node/resource summaries."""

from flotilla.member.client import REQUEST_TIMEOUT, Health, MemberClient, MemberError
from flotilla.member.credentials import Credentials, load_kubeconfig
from flotilla.member.summary import node_summary, resource_summary

__all__ = [
    "REQUEST_TIMEOUT",
    "Credentials",
    "Health",
    "MemberClient",
    "MemberError",
    "load_kubeconfig",
    "node_summary",
    "resource_summary",
]
