"""Benchmarks that print one JSON object, each run as `python -m flotilla.plane.benchmarks.<name>`
(`make bench`) and taking `--smoke`, its smallest run; the failover benchmark is also
`flotilla bench failover`. readyz_probe, resources and stats are their helpers."""

from pathlib import Path

# Where the checkout is: the directory benchmarks start `python -m services.…` and `sim` in.
ROOT = Path(__file__).resolve().parents[3]
