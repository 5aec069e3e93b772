"""Client for the simulator's admin API: it lives in the application (flotilla.plane.simclient), which talks
to the simulator only over HTTP; this module re-exports it for the simulator's users."""

from flotilla.plane.simclient import AdminError, add_cluster, list_clusters, set_app_fault, set_fault

__all__ = ["AdminError", "add_cluster", "list_clusters", "set_app_fault", "set_fault"]
