"""The chaos suite starts `flotilla up` like the e2e tests: the same isolated home."""

from tests.e2e.conftest import isolated_home

__all__ = ["isolated_home"]
