"""podtax kubesim through the real `kubernetes` client: list/watch, selectors, versions, conflicts, binding."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.testing import Sim

NS = "default"


def pod(name: str, labels: dict | None = None, scheduler: str = "benchmark-scheduler", **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "podtax/bench:1"}], **spec}}


@pytest.fixture
def core(kubesim: Sim) -> client.CoreV1Api:
    return client.CoreV1Api(kubesim.api_client())


def names(items: list) -> set[str]:
    return {i.metadata.name for i in items}


def test_server_says_it_is_simulated(kubesim: Sim, core: client.CoreV1Api) -> None:
    version = client.VersionApi(kubesim.api_client()).get_code()
    assert "kubesim" in version.git_version
    for node in core.list_node().items:
        assert node.metadata.annotations["podtax.io/simulated"] == "true"
        assert node.metadata.labels["kubernetes.io/arch"] in ("amd64", "arm64")


def test_label_and_field_selectors(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("a", {"app": "x", "tier": "1"}))
    core.create_namespaced_pod(NS, pod("b", {"app": "y"}))
    core.create_namespaced_pod(NS, pod("c", {"other": "z"}, scheduler="default-scheduler",
                                       nodeSelector={"kubernetes.io/hostname": "x86-1"}))

    def sel(**kw: str) -> set[str]:
        return names(core.list_namespaced_pod(NS, **kw).items)

    assert sel(label_selector="app=x") == {"a"}
    assert sel(label_selector="app!=x") == {"b", "c"}
    assert sel(label_selector="app in (x, y)") == {"a", "b"}
    assert sel(label_selector="app notin (x)") == {"b", "c"}
    assert sel(label_selector="app") == {"a", "b"}
    assert sel(label_selector="!app") == {"c"}
    assert sel(label_selector="app,tier=1") == {"a"}
    assert sel(field_selector="metadata.name=b") == {"b"}
    assert sel(field_selector="spec.schedulerName=benchmark-scheduler") == {"a", "b"}
    assert sel(field_selector="spec.nodeName=x86-1") == {"c"}
    assert sel(field_selector="spec.nodeName=") == {"a", "b"}
    assert sel(field_selector="status.phase!=Pending,metadata.namespace=default") == {"c"}
    assert names(core.list_pod_for_all_namespaces(field_selector="spec.nodeName=x86-1").items) == {"c"}


def test_generate_name_and_server_side_fields(core: client.CoreV1Api) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "bench-"}
    created = core.create_namespaced_pod(NS, body)
    assert created.metadata.name.startswith("bench-") and len(created.metadata.name) == len("bench-") + 5
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"


def test_not_found_is_a_status(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("missing", NS)
    assert err.value.status == 404
    body = json.loads(err.value.body)
    assert body["kind"] == "Status" and body["reason"] == "NotFound"


def test_watch_resumes_from_resource_version(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("before"))
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    core.create_namespaced_pod(NS, pod("w1", {"app": "w"}))
    core.create_namespaced_pod(NS, pod("other", {"app": "v"}))
    core.patch_namespaced_pod("w1", NS, {"metadata": {"labels": {"step": "2"}}})
    w = watch.Watch()
    events = []
    for ev in w.stream(core.list_namespaced_pod, NS, resource_version=rv, label_selector="app=w", timeout_seconds=2):
        events.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        if len(events) == 2:
            w.stop()
    assert [(t, n) for t, n, _ in events] == [("ADDED", "w1"), ("MODIFIED", "w1")]
    last = events[-1][2]
    core.delete_namespaced_pod("w1", NS)  # unbound: removed at once
    resumed = [(ev["type"], ev["object"].metadata.name) for ev in
               watch.Watch().stream(core.list_namespaced_pod, NS, resource_version=last, label_selector="app=w",
                                    timeout_seconds=1)]
    assert resumed == [("DELETED", "w1")]


def test_watch_label_transition_and_live_events(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("t", {"app": "no"}))
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    seen: list[tuple[str, str]] = []
    w = watch.Watch()

    def run() -> None:
        for ev in w.stream(core.list_namespaced_pod, NS, resource_version=rv, label_selector="app=yes",
                           timeout_seconds=3):
            seen.append((ev["type"], ev["object"].metadata.name))
            if len(seen) == 2:
                w.stop()

    thread = threading.Thread(target=run)
    thread.start()
    core.patch_namespaced_pod("t", NS, {"metadata": {"labels": {"app": "yes"}}})
    core.patch_namespaced_pod("t", NS, {"metadata": {"labels": {"app": "gone"}}})
    thread.join(5)
    assert seen == [("ADDED", "t"), ("DELETED", "t")]


def test_watch_too_old_gets_410_then_relist(kubesim: Sim, core: client.CoreV1Api) -> None:
    old = core.list_namespaced_pod(NS).metadata.resource_version
    core.create_namespaced_pod(NS, pod("x"))
    kubesim.compact()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_pod, NS, resource_version=old, timeout_seconds=1):
            pass
    assert err.value.status == 410
    raw = core.list_namespaced_pod(NS, watch=True, resource_version=old, _preload_content=False)
    line = json.loads(raw.data.splitlines()[0])
    assert line["type"] == "ERROR" and line["object"]["code"] == 410 and line["object"]["reason"] == "Expired"
    fresh = core.list_namespaced_pod(NS)  # the informer's answer: re-list, then watch from there
    core.create_namespaced_pod(NS, pod("y"))
    got = [ev["object"].metadata.name for ev in watch.Watch().stream(
        core.list_namespaced_pod, NS, resource_version=fresh.metadata.resource_version, timeout_seconds=1)]
    assert got == ["y"]


def test_watch_bookmarks(kubesim_factory) -> None:  # type: ignore[no-untyped-def]
    sim = kubesim_factory(bookmark_interval=0.2)
    core = client.CoreV1Api(sim.api_client())
    rv = core.list_namespaced_pod(NS).metadata.resource_version
    raw = core.list_namespaced_pod(NS, watch=True, resource_version=rv, allow_watch_bookmarks=True,
                                   timeout_seconds=1, _preload_content=False)
    lines = [json.loads(x) for x in raw.data.splitlines()]
    assert lines and all(x["type"] == "BOOKMARK" for x in lines)
    assert int(lines[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_bind_and_known_client_deserialisation_problem(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod(NS, pod("b1"))
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="b1", uid=created.metadata.uid),
                            target=client.V1ObjectReference(kind="Node", name="x86-0"))
    # The apiserver answers 201 with a Status; the client tries to read it as a V1Binding and fails
    # on the missing `target` (older clients: "Invalid value for `target`, must not be `None`";
    # pydantic-based ones: a ValidationError). The binding has happened all the same.
    with pytest.raises((ValueError, TypeError)) as err:
        core.create_namespaced_pod_binding("b1", NS, body)
    assert "target" in str(err.value)
    assert core.read_namespaced_pod("b1", NS).spec.node_name == "x86-0"

    core.create_namespaced_pod(NS, pod("b2"))
    body2 = client.V1Binding(metadata=client.V1ObjectMeta(name="b2"),
                             target=client.V1ObjectReference(kind="Node", name="x86-1"))
    resp = core.create_namespaced_pod_binding("b2", NS, body2, _preload_content=False)  # the workaround
    assert resp.status == 201 and json.loads(resp.data)["status"] == "Success"
    bound = core.read_namespaced_pod("b2", NS)
    assert bound.spec.node_name == "x86-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in bound.status.conditions)


def test_double_bind_and_uid_mismatch_conflict(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("d"))

    def bind(node: str, uid: str | None = None) -> None:
        body = client.V1Binding(metadata=client.V1ObjectMeta(name="d", uid=uid),
                                target=client.V1ObjectReference(kind="Node", name=node))
        core.create_namespaced_pod_binding("d", NS, body, _preload_content=False)

    with pytest.raises(ApiException) as err:
        bind("x86-0", uid="00000000-0000-0000-0000-000000000000")
    assert err.value.status == 409 and "Precondition failed" in err.value.body
    bind("x86-0")
    with pytest.raises(ApiException) as err:
        bind("x86-1")
    assert err.value.status == 409 and "already assigned" in err.value.body
    with pytest.raises(ApiException) as err:  # the legacy namespaced bindings endpoint behaves alike
        core.create_namespaced_binding(NS, client.V1Binding(
            metadata=client.V1ObjectMeta(name="d"), target=client.V1ObjectReference(kind="Node", name="x86-1")),
            _preload_content=False)
    assert err.value.status == 409


def test_a_gated_pod_is_not_bound_until_its_gates_are_removed(core: client.CoreV1Api) -> None:
    # as the API server's binding REST: 409 'pod g has non-empty .spec.schedulingGates'; gates may only be removed
    core.create_namespaced_pod(NS, pod("g", schedulingGates=[{"name": "example.com/wait"}]))
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="g"),
                            target=client.V1ObjectReference(kind="Node", name="x86-0"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("g", NS, body, _preload_content=False)
    assert err.value.status == 409
    assert json.loads(err.value.body)["message"] == ('Operation cannot be fulfilled on pods/binding "g": pod g has '
                                                     'non-empty .spec.schedulingGates')
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("g", NS, {"spec": {"schedulingGates": [{"name": "example.com/wait"},
                                                                         {"name": "other"}]}})
    assert err.value.status == 422 and "only deletion is allowed, but found new scheduling gate 'other'" in \
        err.value.body
    core.patch_namespaced_pod("g", NS, {"spec": {"schedulingGates": None}})
    core.create_namespaced_pod_binding("g", NS, body, _preload_content=False).release_conn()
    assert core.read_namespaced_pod("g", NS).spec.node_name == "x86-0"


def test_stale_resource_version_conflicts(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("s"))
    first = core.read_namespaced_pod("s", NS)
    core.patch_namespaced_pod("s", NS, {"metadata": {"labels": {"v": "2"}}})
    first.metadata.labels = {"v": "stale"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_pod("s", NS, first)
    assert err.value.status == 409
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("s", NS, {"metadata": {"resourceVersion": first.metadata.resource_version,
                                                         "labels": {"v": "3"}}})
    assert err.value.status == 409
    status_patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                               "reason": "Unschedulable", "message": "no node fits"}]}}
    patched = core.patch_namespaced_pod_status("s", NS, status_patch)
    assert patched.status.conditions[0].reason == "Unschedulable"
    assert patched.metadata.labels == {"v": "2"}


def test_events_both_apis(kubesim: Sim, core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod(NS, pod("e"))
    ev = client.EventsV1Event(metadata=client.V1ObjectMeta(name="e.1"), event_time="2026-01-01T00:00:00.000000Z",
                              reason="Scheduled", note="placed by score", type="Normal", action="Binding",
                              reporting_controller="benchmark-scheduler", reporting_instance="benchmark-scheduler-0",
                              regarding=client.V1ObjectReference(kind="Pod", name="e", namespace=NS,
                                                                 uid=created.metadata.uid))
    client.EventsV1Api(kubesim.api_client()).create_namespaced_event(NS, ev)
    core_events = core.list_namespaced_event(NS, field_selector="involvedObject.name=e").items
    assert [(e.reason, e.message) for e in core_events] == [("Scheduled", "placed by score")]
    listed = client.EventsV1Api(kubesim.api_client()).list_namespaced_event(NS).items
    assert any(e.note == "placed by score" and e.regarding.name == "e" for e in listed)


def test_leases_conflict_for_leader_election(kubesim: Sim) -> None:
    coord = client.CoordinationV1Api(kubesim.api_client())
    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="benchmark-scheduler"),
                           spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15))
    coord.create_namespaced_lease("kube-system", lease)
    with pytest.raises(ApiException) as err:
        coord.create_namespaced_lease("kube-system", lease)
    assert err.value.status == 409
    mine, theirs = (coord.read_namespaced_lease("benchmark-scheduler", "kube-system") for _ in range(2))
    mine.spec.holder_identity = "a"
    coord.replace_namespaced_lease("benchmark-scheduler", "kube-system", mine)
    theirs.spec.holder_identity = "b"
    with pytest.raises(ApiException) as err:
        coord.replace_namespaced_lease("benchmark-scheduler", "kube-system", theirs)
    assert err.value.status == 409
    assert coord.read_namespaced_lease("benchmark-scheduler", "kube-system").spec.holder_identity == "a"


SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                  "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                  r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize("name", ["a..b", "a.-b", "a-.b", "-a", "a.", "Bad", "a" * 254])
def test_an_object_name_the_api_server_refuses_is_422_in_its_words(kubesim: Sim, name: str) -> None:
    """A DNS-1123 subdomain: each dot-separated part starts and ends with a letter or digit (a..b, a.-b and a-.b
    were taken), at most 253 characters."""
    coord = client.CoordinationV1Api(kubesim.api_client())
    with pytest.raises(ApiException) as err:
        coord.create_namespaced_lease("kube-system", client.V1Lease(metadata=client.V1ObjectMeta(name=name)))
    rule = "must be no more than 253 characters" if len(name) > 253 else SUBDOMAIN_RULE
    said = json.loads(err.value.body)["message"].partition(" is invalid: ")[2]
    assert (err.value.status, said) == (422, f'metadata.name: Invalid value: "{name}": {rule}')


LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
              "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


@pytest.mark.parametrize("name,rules", [
    ("a.b", ["must not contain dots"]), ("Bad", [LABEL_RULE]), ("a-", [LABEL_RULE]),
    ("a..b", [LABEL_RULE]),  # dotted but no subdomain either: the label's rule (apimachinery's IsDNS1123Label)
    ("a" * 64, ["must be no more than 63 characters"]),
    ("a." * 32 + "a", ["must be no more than 63 characters", "must not contain dots"]),  # both, as the API server
])
def test_a_namespace_name_is_a_dns_label_in_the_api_servers_words(core: client.CoreV1Api, name: str,
                                                                   rules: list[str]) -> None:
    """A Namespace's name is a DNS-1123 label (no dots, 63 characters at most), not a subdomain (review hR5 F6); a
    subdomain that is no label 'must not contain dots' (review hR8)."""
    with pytest.raises(ApiException) as err:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    said = [f'metadata.name: Invalid value: "{name}": {rule}' for rule in rules]
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == \
        f'Namespace "{name}" is invalid: {said[0] if len(said) == 1 else "[" + ", ".join(said) + "]"}'
    for name in ("a" * 63, "a-b", "9"):
        assert core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name))).metadata.name == name


def test_a_name_too_long_and_malformed_is_refused_with_both_rules(kubesim: Sim) -> None:
    coord = client.CoordinationV1Api(kubesim.api_client())
    name = "A" * 254
    with pytest.raises(ApiException) as err:
        coord.create_namespaced_lease("kube-system", client.V1Lease(metadata=client.V1ObjectMeta(name=name)))
    said = json.loads(err.value.body)["message"].partition(" is invalid: ")[2]
    assert said == (f'[metadata.name: Invalid value: "{name}": must be no more than 253 characters, '
                    f'metadata.name: Invalid value: "{name}": {SUBDOMAIN_RULE}]')


def test_object_names_the_api_server_takes_are_taken(kubesim: Sim) -> None:
    coord = client.CoordinationV1Api(kubesim.api_client())
    for name in ("a.b-c.d", "a--b", "9", "a" * 253):
        lease = client.V1Lease(metadata=client.V1ObjectMeta(name=name))
        assert coord.create_namespaced_lease("kube-system", lease).metadata.name == name


def test_pod_spec_is_immutable_and_node_name_needs_binding(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(NS, pod("i"))
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("i", NS, {"spec": {"nodeName": "x86-0"}})
    assert err.value.status == 422
