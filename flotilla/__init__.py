"""Flotilla: multi-cluster failover on Karmada's API."""

__version__ = "0.1.0"
