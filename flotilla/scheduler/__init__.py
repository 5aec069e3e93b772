"""The scheduler's pure code: places ResourceBindings and ClusterResourceBindings on member clusters
(docs/karmada-rules.md §8) from a snapshot, with no store and no I/O. The service (`services.scheduler`) runs it against
etcd; `flotillactl schedule` runs it on files. Plugins implement `flotilla.scheduler.plugin_api`."""
