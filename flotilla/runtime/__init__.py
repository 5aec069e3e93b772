"""Controller runtime: work queue, reconcile loop, service bootstrap."""
