"""Content negotiation on the Accept header, as the API server does it for the alternative forms
of a JSON answer (`as=Table`, `as=APIGroupDiscoveryList`)."""

from __future__ import annotations

from collections.abc import Collection

JSON_MEDIA = ("application/json", "*/*")


def negotiated(accept: str, form: str, group: str, versions: Collection[str]) -> str | None:
    """The version of `form` (`as=<form>;g=<group>;v=<version>`) the header asks for before any
    plain JSON, or None for plain JSON. Entries are tried in order; one this server cannot answer
    (another media type, an unknown version) is passed over."""
    for entry in accept.split(","):
        media, *params = (part.strip() for part in entry.split(";"))
        options = dict(p.partition("=")[::2] for p in params)
        if media in JSON_MEDIA and options.get("as") == form:
            if options.get("g") == group and options.get("v") in versions:
                return options["v"]
            continue
        if media in (*JSON_MEDIA, "application/*") and "as" not in options:
            return None
    return None
