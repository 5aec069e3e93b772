"""Flotilla's API: generated messages (`flotilla.api.v1`) and the helpers around them.

- registry: kinds, their message types, etcd resources and scope
- keys: object keys, etcd keys, binding/Work/es-namespace names
- codec: Karmada YAML/JSON <-> messages, with field paths in errors
- conditions: metav1.Condition lists
- clusters: a Cluster's readiness (its Ready condition)
- taints: taints, tolerations and their matching rules
"""
