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

from flotilla.benchmarks import failover


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    failover.add_arguments(parser)
    return failover.main(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
