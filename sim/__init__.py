"""Simulated member clusters that speak the Kubernetes API, with fault injection.

`SimServer` serves many clusters from one process (each on its own HTTPS port, one aiohttp app
and one timer task for all);
`python -m sim` runs it as a service (`--processes N`: N of them, each with a share of the
clusters, behind one admin API; sim/shards.py); `flotilla.plane.simclient` (re-exported as `sim.admin`) is the
client of its admin API.
"""

from sim.cluster import SimCluster
from sim.faults import Fault
from sim.server import SimServer

__all__ = ["Fault", "SimCluster", "SimServer"]
