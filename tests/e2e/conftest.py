"""End-to-end tests start `flotilla up`, which records the current context in the user's
config dir: point HOME and XDG_CONFIG_HOME at a tmp dir so the real home is never touched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        patch.delenv("FLOTILLA_CONFIG", raising=False)
        patch.delenv("FLOTILLA_ETCD_ENDPOINTS", raising=False)
        yield
