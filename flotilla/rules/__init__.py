"""The Karmada rules more than one service uses: failover history, aggregated status, graceful
eviction tasks, building a binding from its template and policy, resource selection, JSONPath
templates, apportionment (pure functions over the API's messages), and where a joined cluster's
credentials are kept (cluster_secrets, which reads them from the store). Above the runtime, below
the scheduler's library and the services; a rule only one service uses stays in its package."""
