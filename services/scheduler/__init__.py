"""The scheduler: places ResourceBindings and ClusterResourceBindings on member clusters (docs/karmada-rules.md §8)."""
