"""The Karmada rules more than one service uses, pure functions over the API's messages: failover
history, aggregated status, graceful eviction tasks, building a binding from its template and
policy, resource selection, JSONPath templates, apportionment, and where a cluster's credentials
are kept. Above the runtime, below the services (and the scheduler's library); a service's own
rules stay in its package."""
