"""Controller runtime: clock, work queue, reconcile loop, service bootstrap."""
