"""The one error type raised for a user-facing, one-line failure (by flotillactl, the `flotilla`
command, and what they call: the current context, the documents they read), and how any error is
shortened to the line a user sees. On the API floor so that every floor may raise it and only
the commands on top catch it."""


class UserError(Exception):
    """A failure the user can act on; its message is the one line they see."""


def short(e: BaseException) -> str:
    """The first line of an error's text: what a user sees instead of a traceback."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
