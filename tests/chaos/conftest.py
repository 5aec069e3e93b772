"""The chaos suite starts `flotilla up` like the e2e tests (the same isolated home), one plane per
module: by default one replica of each service on one etcd member (a module may override `chaos`)."""

from collections.abc import Iterator

import pytest

from tests.chaos.support import ChaosPlane, chaos_plane
from tests.e2e.conftest import isolated_home

__all__ = ["chaos", "isolated_home"]


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChaosPlane]:
    with chaos_plane(tmp_path_factory) as plane:
        yield plane
