"""Benchmarks that run the whole control plane and print one JSON object (see bench/)."""
