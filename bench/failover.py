"""Failover benchmark: what `flotilla bench failover` runs (flotilla/benchmarks/failover.py says how);
prints one JSON object.

    python bench/failover.py --clusters 10 --bindings 1000
    python bench/failover.py --clusters 100 --bindings 10000 --affected 1000
    python bench/failover.py --clusters 100 --bindings 10000 --sweep
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flotilla.plane.benchmarks import failover

SMOKE = {"clusters": 3, "bindings": 6, "failure_threshold": "1s", "timeout": 120.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    failover.add_arguments(parser)
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run that goes through every step (tests/e2e/test_bench_smoke.py)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    return failover.main(args)


if __name__ == "__main__":
    sys.exit(main())
