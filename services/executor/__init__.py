"""Executor: bindings -> Works -> members; also the Pull-mode agent inside a member cluster."""
