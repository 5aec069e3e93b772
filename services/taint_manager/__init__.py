"""Cluster conditions -> taints; NoExecute taints -> binding eviction."""
