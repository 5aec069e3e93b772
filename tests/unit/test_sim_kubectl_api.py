"""What the simulator serves for kubectl beyond Flotilla's needs: Tables, OpenAPI v3 documents,
field validation, and refusing dry runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from sim.tables import table_version

if TYPE_CHECKING:
    from tests.sim_fixtures import KubeHttp, StartSim

pytestmark = pytest.mark.timeout(10)

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io," \
        "application/json"


def deployment(**extra_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}, **extra_spec}}


@pytest.fixture
async def api(start_sim: StartSim, kube_http: Callable[..., KubeHttp]) -> KubeHttp:
    server = await start_sim()
    return kube_http(server.cluster("member1"))


def test_table_negotiation() -> None:
    assert table_version(TABLE) == "v1"
    assert table_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json") == "v1beta1"
    assert table_version("application/json, */*") is None
    assert table_version("application/json;as=Table;v=v9;g=meta.k8s.io,application/json") is None


async def test_lists_and_objects_print_as_tables(api: KubeHttp) -> None:
    await api.ok("POST", DEPLOYMENTS, deployment())
    table = await api.ok("GET", DEPLOYMENTS, accept=TABLE)
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0), ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0), ("Containers", 1),
        ("Images", 1), ("Selector", 1)]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["web", "0/2", 2, 0] and row["cells"][5:] == ["app", "nginx", "app=web"]
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["namespace"] == "default"

    one = await api.ok("GET", f"{DEPLOYMENTS}/web", accept=TABLE, includeObject="Object")
    assert one["rows"][0]["object"]["spec"]["replicas"] == 2
    nodes = await api.ok("GET", "/api/v1/nodes", accept=TABLE)
    assert [c["name"] for c in nodes["columnDefinitions"] if c["priority"] == 0] == [
        "Name", "Status", "Roles", "Age", "Version"]
    assert nodes["rows"][0]["cells"][1:3] == ["Ready", "<none>"]
    # A plain client still gets the list.
    assert (await api.ok("GET", DEPLOYMENTS))["kind"] == "DeploymentList"


async def test_custom_resources_print_their_crds_columns(api: KubeHttp) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}},
                                  "additionalPrinterColumns": [{"name": "Size", "type": "integer",
                                                                "jsonPath": ".spec.size"}]}]}}
    await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    await api.ok("POST", widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                                   "spec": {"size": 3}})
    table = await api.ok("GET", widgets, accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["w", 3]
    crds = await api.ok("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", accept=TABLE)
    assert [c["name"] for c in crds["columnDefinitions"]] == ["Name", "Created At"]

    # The CRD's schema is what strict validation checks.
    status, answer = await api.request("POST", widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                         "metadata": {"name": "x"}, "spec": {"colour": "red"}},
                                       fieldValidation="Strict")
    assert (status, answer["message"]) == (400, 'Widget in version "v1" cannot be handled as a Widget: '
                                                'strict decoding error: unknown field "spec.colour"')


async def test_field_validation(api: KubeHttp) -> None:
    unknown = deployment(colour="blue")
    unknown["spec"]["template"]["spec"]["containers"][0]["sise"] = 1
    status, answer = await api.request("POST", DEPLOYMENTS, unknown, fieldValidation="Strict")
    assert status == 400 and answer["reason"] == "BadRequest"
    # In the order the body has them, as the API server's decoder meets them.
    assert answer["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
                                 'error: unknown field "spec.template.spec.containers[0].sise", unknown field '
                                 '"spec.colour"')
    # Warn, the default: written, with a warning per unknown field.
    await api.ok("POST", DEPLOYMENTS, unknown)
    assert api.headers["Warning"] == ['299 - "unknown field \\"spec.template.spec.containers[0].sise\\""',
                                      '299 - "unknown field \\"spec.colour\\""']
    # A strategic merge patch's directives are not fields; Ignore skips the check.
    patch = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "app"}],
                                            "containers": [{"name": "app", "image": "nginx:2"}]}}}}
    await api.ok("PATCH", f"{DEPLOYMENTS}/web", patch, content_type="application/strategic-merge-patch+json",
                 fieldValidation="Strict")
    await api.ok("PUT", f"{DEPLOYMENTS}/web", await api.ok("GET", f"{DEPLOYMENTS}/web"), fieldValidation="Ignore")
    status, answer = await api.request("POST", DEPLOYMENTS, deployment(), fieldValidation="Loose")
    assert status == 400 and "fieldValidation" in answer["message"]


async def test_dry_runs_are_refused_not_written(api: KubeHttp) -> None:
    status, answer = await api.request("POST", DEPLOYMENTS, deployment(), dryRun="All")
    assert status == 400 and "dryRun" in answer["message"]
    assert (await api.ok("GET", DEPLOYMENTS))["items"] == []


async def test_openapi_v3_advertises_field_validation(api: KubeHttp) -> None:
    index = (await api.ok("GET", "/openapi/v3"))["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1"} <= set(index)
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    document = await api.ok("GET", url.split("?")[0])
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    schemas = document["components"]["schemas"]
    assert schemas["V1Deployment"]["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "version": "v1", "kind": "Deployment"}]
    assert schemas["V1DeploymentSpec"]["properties"]["template"] == {"$ref": "#/components/schemas/V1PodTemplateSpec"}
    assert "V1Container" in schemas
    assert (await api.get("/openapi/v3/apis/nope/v1"))[0] == 404
    # v2 describes nothing; kubectl asks for it in protobuf, where that is an empty message.
    status, v2 = await api.request("GET", "/openapi/v2",
                                   accept="application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert (status, v2) == (200, "")
    assert (await api.ok("GET", "/openapi/v2"))["definitions"] == {}
