"""The command line every benchmark shares: its module docstring as the description, and `--smoke`,
the smallest run that goes through every step (tests/e2e/test_bench_smoke.py)."""

import argparse
from collections.abc import Mapping, Sequence


def parser(doc: str | None) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def parse(parser: argparse.ArgumentParser, smoke: Mapping[str, object],
          argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed flags, with `smoke`'s values over them when `--smoke` is given."""
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run that goes through every step (tests/e2e/test_bench_smoke.py)")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(smoke)
    return args
