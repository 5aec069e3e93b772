"""The scheduler: places ResourceBindings and ClusterResourceBindings on member clusters (spec §8)."""
