"""Running flotillactl in-process, as a user would from a shell, capturing what it prints."""

from __future__ import annotations

import contextlib
import io
import sys


def flotillactl(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `flotillactl ARGV…`; usage errors included."""
    from flotilla.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as e:  # argparse usage errors
                code = int(e.code or 0)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()
