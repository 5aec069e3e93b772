"""Benchmarks that print one JSON object, each run as `python -m flotilla.plane.benchmarks.<name>`
(`make bench`) and taking `--smoke`, its smallest run; the failover benchmark is also
`flotilla bench failover`. readyz_probe, resources and stats are their helpers."""
