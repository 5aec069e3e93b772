"""Probing a member cluster and turning what is seen into Cluster.status.

Shared by the status service (Push clusters) and the Pull-mode agent, which
run the same rules on their own clusters.
"""
