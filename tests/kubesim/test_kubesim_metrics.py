"""podtax kubesim's /metrics: apiserver_request_total and apiserver_request_duration_seconds as a real
kube-apiserver names them, counted from requests of the real kubernetes client."""

from __future__ import annotations

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.metrics import request_info
from podtax_kubesim.testing import Sim
from prometheus_client.parser import text_string_to_metric_families

NS = "default"


def metrics_text(sim: Sim) -> tuple[str, str]:
    """GET /metrics through the real client's transport and auth (TLS and token when the emulator has them)."""
    api = sim.api_client()
    params = api.param_serialize(method="GET", resource_path="/metrics", auth_settings=["BearerToken"])
    resp = api.call_api(*params)
    resp.read()
    assert resp.status == 200
    return resp.data.decode(), resp.getheader("Content-Type")


def scrape(sim: Sim) -> dict[str, dict[tuple, float]]:
    """{sample name: {(verb, resource, subresource, scope, code|le): value}} summed over other labels."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(metrics_text(sim)[0]):
        for s in family.samples:
            key = tuple(s.labels.get(k, "") for k in ("verb", "resource", "subresource", "scope", "code", "le"))
            bucket = out.setdefault(s.name, {})
            bucket[key] = bucket.get(key, 0.0) + s.value
    return out


def total(metrics: dict, verb: str, resource: str, code: str, subresource: str = "") -> float:
    return sum(v for (vb, res, sub, _, c, _le), v in metrics.get("apiserver_request_total", {}).items()
               if (vb, res, sub, c) == (verb, resource, subresource, code))


@pytest.mark.parametrize("method, path, query, expected", [
    ("GET", "/api/v1/namespaces/default/pods", {}, ("LIST", "", "v1", "pods", "", "namespace")),
    ("GET", "/api/v1/namespaces/default/pods", {"watch": "true"}, ("WATCH", "", "v1", "pods", "", "namespace")),
    ("GET", "/api/v1/watch/namespaces/default/pods/p", {}, ("WATCH", "", "v1", "pods", "", "resource")),
    ("GET", "/api/v1/nodes", {"watch": "false"}, ("LIST", "", "v1", "nodes", "", "cluster")),
    ("GET", "/api/v1/namespaces/default/pods/p/log", {}, ("GET", "", "v1", "pods", "log", "resource")),
    ("POST", "/api/v1/namespaces/default/persistentvolumeclaims", {},
     ("POST", "", "v1", "persistentvolumeclaims", "", "resource")),
    ("POST", "/api/v1/namespaces/default/pods/p/binding", {}, ("POST", "", "v1", "pods", "binding", "resource")),
    ("PUT", "/api/v1/namespaces/ns1/status", {}, ("PUT", "", "v1", "namespaces", "status", "resource")),
    ("DELETE", "/api/v1/persistentvolumes/pv-1", {}, ("DELETE", "", "v1", "persistentvolumes", "", "resource")),
    ("DELETE", "/apis/batch/v1/namespaces/default/jobs", {},
     ("DELETECOLLECTION", "batch", "v1", "jobs", "", "namespace")),
    ("GET", "/api/v1/namespaces/default/pods/p/exec", {}, ("CONNECT", "", "v1", "pods", "exec", "resource")),
])
def test_request_info_like_a_real_apiserver(method: str, path: str, query: dict, expected: tuple) -> None:
    info = request_info(method, path, query)
    assert info is not None
    assert (info.verb, info.group, info.version, info.resource, info.subresource, info.scope) == expected


def test_request_info_patch_and_non_resource() -> None:
    assert request_info("PATCH", "/api/v1/nodes/n", {}, "application/apply-patch+yaml").verb == "APPLY"
    assert request_info("PATCH", "/api/v1/nodes/n", {}, "application/merge-patch+json").verb == "PATCH"
    assert request_info("GET", "/api/v1/pods", {"dryRun": "All"}).dry_run == "All"
    for path in ("/version", "/api", "/api/v1", "/apis/batch/v1", "/healthz", "/metrics"):
        assert request_info("GET", path, {}) is None


def test_creates_lists_and_one_watch_counted(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    before = scrape(kubesim)
    n = 5
    for i in range(n):
        core.create_namespaced_config_map(NS, {"metadata": {"name": f"cm-{i}"}, "data": {"k": "v"}})
    core.list_namespaced_config_map(NS)
    core.read_namespaced_config_map("cm-0", NS)
    core.patch_namespaced_config_map("cm-0", NS, {"data": {"k": "w"}})
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("missing", NS)
    core.delete_namespaced_config_map("cm-0", NS)
    core.delete_collection_namespaced_config_map(NS)
    events = list(watch.Watch().stream(core.list_namespaced_config_map, NS, timeout_seconds=1))
    assert events == []  # all were deleted: the watch saw nothing and ended after 1 s
    after = scrape(kubesim)
    assert total(after, "POST", "configmaps", "201") - total(before, "POST", "configmaps", "201") == n
    assert total(after, "LIST", "configmaps", "200") == 1
    assert total(after, "GET", "configmaps", "200") == 1
    assert total(after, "GET", "configmaps", "404") == 1
    assert total(after, "PATCH", "configmaps", "200") == 1
    assert total(after, "DELETE", "configmaps", "200") == 1
    assert total(after, "DELETECOLLECTION", "configmaps", "200") == 1
    assert total(after, "WATCH", "configmaps", "200") == 1  # one watch request, however many events
    # the histogram: one observation per finished request, buckets cumulative up to +Inf
    counts = after["apiserver_request_duration_seconds_count"]
    assert sum(v for (vb, res, *_), v in counts.items() if (vb, res) == ("POST", "configmaps")) == n
    infs = [v for (vb, res, _s, _sc, _c, le), v in after["apiserver_request_duration_seconds_bucket"].items()
            if (vb, res, le) == ("POST", "configmaps", "+Inf")]
    assert infs == [n]
    assert metrics_text(kubesim)[1].startswith("text/plain; version=0.0.4")


def test_open_watch_counted_once_while_streaming(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_persistent_volume_claim, NS, timeout_seconds=30)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "poke"}})
    core.create_namespaced_persistent_volume_claim(NS, {"metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    first = next(stream)
    assert first["type"] == "ADDED"
    metrics = scrape(kubesim)
    assert total(metrics, "WATCH", "persistentvolumeclaims", "200") == 1
    gauge = metrics["apiserver_longrunning_requests"]
    assert sum(v for (vb, res, *_), v in gauge.items() if (vb, res) == ("WATCH", "persistentvolumeclaims")) == 1
    w.stop()
