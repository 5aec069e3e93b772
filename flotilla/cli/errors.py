"""The one error type commands raise for a user-facing, one-line failure."""


class CLIError(Exception):
    pass


def short(e: BaseException) -> str:
    """The first line of an error's text: what a user sees instead of a traceback."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
