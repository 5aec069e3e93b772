"""The simulator's write preconditions, as the API server keeps them: DeleteOptions.preconditions
(uid, resourceVersion) and a resourceVersion sent in a patch, each refused with 409 Conflict when
the object is not (or no longer) the one named, and nothing written or deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)

# ConfigMaps: no simulated controller writes them, so a version read stays current.
CM = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def configmap(value: str = "a") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "default"},
            "data": {"key": value}}


def delete_options(**preconditions: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
            "preconditions": preconditions}


@pytest.fixture
async def api(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> KubeHttp:
    server = await start_sim()
    return kube_http(server.cluster("member1"))


@pytest.mark.parametrize(("field", "stale", "message"), [
    ("uid", "another-uid", "Precondition failed: UID in precondition: another-uid, UID in object meta: "),
    ("resourceVersion", "1",
     "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: "),
])
async def test_a_delete_whose_preconditions_fail_deletes_nothing(api: KubeHttp, field: str, stale: str,
                                                                 message: str) -> None:
    live = await api.ok("POST", CM, configmap())
    status, refused = await api.request("DELETE", f"{CM}/web", delete_options(**{field: stale}))
    assert (status, refused["reason"]) == (409, "Conflict")
    assert refused["message"].startswith('Operation cannot be fulfilled on configmaps "web": ' + message)
    assert (await api.get(f"{CM}/web"))[0] == 200

    meta = live["metadata"]
    deleted = await api.ok("DELETE", f"{CM}/web",
                           delete_options(uid=meta["uid"], resourceVersion=meta["resourceVersion"]))
    assert deleted["status"] == "Success"
    assert (await api.get(f"{CM}/web"))[0] == 404


async def test_a_delete_without_a_body_or_with_plain_options_still_deletes(api: KubeHttp) -> None:
    await api.ok("POST", CM, configmap())
    await api.ok("DELETE", f"{CM}/web", {"kind": "DeleteOptions", "apiVersion": "v1",
                                                  "propagationPolicy": "Foreground"})
    await api.ok("POST", CM, configmap())
    await api.ok("DELETE", f"{CM}/web")
    assert (await api.request("DELETE", f"{CM}/web", "[1]"))[0] == 400


@pytest.mark.parametrize("content_type", [APPLY, MERGE])
async def test_a_patch_that_names_a_resource_version_applies_only_onto_it(api: KubeHttp, content_type: str) -> None:
    live = await api.ok("POST", CM, configmap())
    version = live["metadata"]["resourceVersion"]
    body = configmap("b") if content_type == APPLY else {"data": {"key": "b"}}
    stale = {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": str(int(version) - 1)}}
    status, refused = await api.request("PATCH", f"{CM}/web", stale, content_type, fieldManager="t",
                                        force="true")
    assert (status, refused["reason"]) == (409, "Conflict")
    assert (await api.ok("GET", f"{CM}/web"))["metadata"]["resourceVersion"] == version

    current = {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": version}}
    patched = await api.ok("PATCH", f"{CM}/web", current, content_type=content_type, fieldManager="t",
                           force="true")
    assert int(patched["metadata"]["resourceVersion"]) > int(version)
