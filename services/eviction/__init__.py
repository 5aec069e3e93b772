"""The eviction service: the second half of every failover (graceful eviction, application
failover, failback)."""
