"""Cluster health: probes, thresholds, Pull-mode leases -> Cluster.status."""
