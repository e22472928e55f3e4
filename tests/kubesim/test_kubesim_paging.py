"""List pagination through the real `kubernetes` client: `limit` and `continue` as a real API server's etcd3 store
answers them (kubesim's paging.py). Before, kubesim ignored both and answered every list in one page."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.testing import Sim

NS = "default"


@pytest.fixture
def core(kubesim: Sim) -> client.CoreV1Api:
    return client.CoreV1Api(kubesim.api_client())


def make(core: client.CoreV1Api, names: list[str], ns: str = NS, labels: Callable[[str], dict] | None = None) -> None:
    for name in random.Random(7).sample(names, len(names)):  # created out of order: the list orders them
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels(name) if labels else {}},
                                               "data": {"k": name}})


def pages(lister: Callable[..., Any], *args: Any, limit: int, **kwargs: Any) -> list[Any]:
    """Every page of a paged list, following the continue tokens (at most 100 pages)."""
    out, token = [], None
    for _ in range(100):
        page = lister(*args, limit=limit, **({"_continue": token} if token else {}), **kwargs)
        out.append(page)
        if not (token := page.metadata._continue):
            return out
    raise AssertionError("more than 100 pages")


def names(page_list: list[Any]) -> list[str]:
    return [i.metadata.name for p in page_list for i in p.items]


def status_of(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


def test_pages_give_each_object_once_in_key_order(core: client.CoreV1Api) -> None:
    want = [f"cm-{i:03d}" for i in range(23)]
    make(core, want)
    got = pages(core.list_namespaced_config_map, NS, limit=5)
    assert names(got) == sorted(want), names(got)  # each once, in etcd key order (they were created shuffled)
    assert [len(p.items) for p in got] == [5, 5, 5, 5, 3]
    assert [p.metadata.remaining_item_count for p in got] == [18, 13, 8, 3, None]
    assert got[-1].metadata._continue is None
    assert len({p.metadata.resource_version for p in got}) == 1  # one snapshot
    assert sorted(names([core.list_namespaced_config_map(NS)])) == sorted(want)  # unpaged: one page, as before


def test_all_namespaces_page_in_etcd_key_order(core: client.CoreV1Api) -> None:
    """namespace/name as etcd keys sort: 'a-b/x' before 'a/x' ('-' is below '/')."""
    for ns in ("a", "a-b"):
        core.create_namespace({"metadata": {"name": ns}})
        make(core, ["x", "y", "z"], ns=ns)
    everything = core.list_config_map_for_all_namespaces().items
    want = sorted(f"{i.metadata.namespace}/{i.metadata.name}" for i in everything)
    got = pages(core.list_config_map_for_all_namespaces, limit=2)
    assert [f"{i.metadata.namespace}/{i.metadata.name}" for p in got for i in p.items] == want
    assert want.index("a-b/x") < want.index("a/x")


def test_later_pages_read_the_first_pages_snapshot(core: client.CoreV1Api) -> None:
    """Created, changed and deleted between pages: the pages after the first still list the snapshot of the first
    (the deleted one as it was, not the created one, the changed one unchanged), as a real API server does."""
    make(core, [f"cm-{i:02d}" for i in range(10)])
    first = core.list_namespaced_config_map(NS, limit=4)
    assert names([first]) == ["cm-00", "cm-01", "cm-02", "cm-03"]
    before = core.read_namespaced_config_map("cm-07", NS)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm-05a"}})
    core.delete_namespaced_config_map("cm-06", NS)
    core.patch_namespaced_config_map("cm-07", NS, {"metadata": {"labels": {"changed": "yes"}}, "data": {"k": "new"}})
    core.delete_namespaced_config_map("cm-08", NS)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm-08"}, "data": {"k": "again"}})
    rest = follow(core, first.metadata._continue)
    assert names(rest) == ["cm-04", "cm-05", "cm-06", "cm-07", "cm-08", "cm-09"]
    seven = next(i for p in rest for i in p.items if i.metadata.name == "cm-07")
    assert (seven.data, seven.metadata.labels, seven.metadata.resource_version) == \
        (before.data, before.metadata.labels, before.metadata.resource_version)
    eight = next(i for p in rest for i in p.items if i.metadata.name == "cm-08")
    assert eight.data == {"k": "cm-08"}
    assert {p.metadata.resource_version for p in rest} == {first.metadata.resource_version}
    now = {i.metadata.name: i for i in core.list_namespaced_config_map(NS, limit=100).items}
    assert "cm-05a" in now and "cm-06" not in now and now["cm-07"].data == {"k": "new"}


def test_a_limit_beside_a_resource_version_lists_at_that_version(core: client.CoreV1Api) -> None:
    """resourceVersion N with a limit (no match given): the list at exactly N, as the API server reads etcd; a version
    not reached yet is 504 'Too large resource version'; "0" is the watch cache's whole list, limit ignored."""
    make(core, ["cm-0", "cm-1", "cm-2"])
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    core.delete_namespaced_config_map("cm-0", NS)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm-00"}})
    then = core.list_namespaced_config_map(NS, limit=2, resource_version=rv)
    assert (names([then]), then.metadata.resource_version) == (["cm-0", "cm-1"], rv)
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(NS, limit=2, resource_version=str(int(rv) + 1000))
    assert (info.value.status, status_of(info.value)["reason"]) == (504, "Timeout"), info.value.body
    whole = core.list_namespaced_config_map(NS, limit=2, resource_version="0")
    assert len(whole.items) == 3 and whole.metadata._continue is None


def follow(core: client.CoreV1Api, token: str, limit: int = 4) -> list[Any]:
    """The pages after one that gave `token`."""
    out: list[Any] = []
    while token:
        page = core.list_namespaced_config_map(NS, limit=limit, _continue=token)
        out.append(page)
        token = page.metadata._continue
    return out


def test_selectors_page_over_the_matches(core: client.CoreV1Api) -> None:
    want = [f"cm-{i:02d}" for i in range(20)]
    make(core, want, labels=lambda n: {"parity": "even" if int(n[-2:]) % 2 == 0 else "odd"})
    got = pages(core.list_namespaced_config_map, NS, limit=3, label_selector="parity=even")
    assert names(got) == want[::2]
    assert [len(p.items) for p in got] == [3, 3, 3, 1]
    assert {p.metadata.remaining_item_count for p in got} == {None}  # not counted with a selector
    by_field = pages(core.list_namespaced_config_map, NS, limit=2, field_selector="metadata.name!=cm-01")
    assert names(by_field) == [n for n in want if n != "cm-01"]


def test_a_selectors_last_match_may_leave_an_empty_page(core: client.CoreV1Api) -> None:
    """The page fills on the last match while keys remain after it: the API server says there is more, and the next
    page is empty (it cannot know that nothing else matches without reading on)."""
    make(core, ["a-1", "a-2", "b-1", "b-2"], labels=lambda n: {"group": n[0]})
    first = core.list_namespaced_config_map(NS, limit=2, label_selector="group=a")
    assert names([first]) == ["a-1", "a-2"] and first.metadata._continue
    second = core.list_namespaced_config_map(NS, limit=2, label_selector="group=a", _continue=first.metadata._continue)
    assert second.items == [] and second.metadata._continue is None


def test_a_malformed_continue_is_400(core: client.CoreV1Api) -> None:
    def refused(token: str, **kwargs: Any) -> str:
        with pytest.raises(ApiException) as info:
            core.list_namespaced_config_map(NS, limit=2, _continue=token, **kwargs)
        assert info.value.status == 400, info.value.body
        body = status_of(info.value)
        assert body["reason"] == "BadRequest", body
        return body["message"]

    def token(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()

    assert refused("not a token!") == \
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 3"
    assert refused(token({"v": "meta.k8s.io/v2", "rv": 5, "start": "x"})) == \
        "invalid continue token: continue key is not valid: server does not recognize this encoded version " \
        "meta.k8s.io/v2"
    assert refused(token({"v": "meta.k8s.io/v1", "rv": 0, "start": "x"})) == \
        "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version " \
        "meta.k8s.io/v1)"
    assert refused(token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""})).endswith("encoded start key empty "
                                                                                    "(version meta.k8s.io/v1)")
    assert refused(token({"v": "meta.k8s.io/v1", "rv": 5, "start": "../kube-system/x"})) == \
        "invalid continue token: continue key is not valid: ../kube-system/x"
    make(core, ["cm-1", "cm-2", "cm-3"])
    good = core.list_namespaced_config_map(NS, limit=1).metadata._continue
    assert refused(good, resource_version="1") == "specifying resource version is not allowed when using continue"


def test_a_token_older_than_the_kept_history_is_410_expired(kubesim: Sim, core: client.CoreV1Api) -> None:
    """Compacted (as etcd compacts): 410 Expired in the API server's words, with a token that goes on at the latest
    version, an inconsistent remainder (what was created since shows)."""
    make(core, [f"cm-{i}" for i in range(6)])
    first = core.list_namespaced_config_map(NS, limit=2)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm-9"}})
    kubesim.compact()
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(NS, limit=2, _continue=first.metadata._continue)
    body = status_of(info.value)
    assert (info.value.status, body["reason"]) == (410, "Expired"), body
    assert body["message"].startswith("The provided continue parameter is too old to display a consistent list "
                                      "result. You can start a new list without the continue parameter, or use the "
                                      "continue token in this response"), body
    rest = follow(core, body["metadata"]["continue"])
    assert names(rest) == ["cm-2", "cm-3", "cm-4", "cm-5", "cm-9"]


def test_events_view_pages(core: client.CoreV1Api, kubesim: Sim) -> None:
    """events.k8s.io/v1 (a view of the core/v1 events) pages as well, in key order."""
    for i in (3, 1, 2, 0):
        core.create_namespaced_event(NS, {"metadata": {"name": f"ev-{i}"}, "reason": "R", "message": "m",
                                          "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "t",
                                          "reportingInstance": "t", "action": "A",
                                          "involvedObject": {"kind": "Pod", "name": f"p-{i}", "namespace": NS}})
    got = pages(client.EventsV1Api(kubesim.api_client()).list_namespaced_event, NS, limit=3)
    assert [n for n in names(got) if n.startswith("ev-")] == ["ev-0", "ev-1", "ev-2", "ev-3"]
    assert all(len(p.items) <= 3 for p in got)


FORBID_NO_RV = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
FORBID_CONTINUE = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
FORBID_EXACT_0 = 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
UNSUPPORTED = ('resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""')


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"resource_version_match": "Exact"}, [FORBID_NO_RV]),
    ({"resource_version_match": "NotOlderThan", "limit": 2}, [FORBID_NO_RV]),
    ({"resource_version_match": "Exact", "resource_version": "0"}, [FORBID_EXACT_0]),
    ({"resource_version_match": "Exact", "resource_version": "0", "limit": 2}, [FORBID_EXACT_0]),
    ({"resource_version_match": "Bogus", "resource_version": "5", "limit": 2}, [UNSUPPORTED]),
    ({"resource_version_match": "NotOlderThan", "continue": True}, [FORBID_NO_RV, FORBID_CONTINUE]),
    ({"resource_version_match": "Bogus", "continue": True}, [FORBID_NO_RV, FORBID_CONTINUE, UNSUPPORTED]),
])
def test_a_resource_version_match_the_api_server_refuses_is_422(core: client.CoreV1Api, kwargs: dict[str, Any],
                                                                 said: list[str]) -> None:
    """ValidateListOptions' rules: resourceVersionMatch needs a resourceVersion, no continue token, Exact or
    NotOlderThan, and not Exact at "0"; each broken one is a cause of one 422 Invalid. Before, kubesim listed (200)."""
    make(core, ["cm-0", "cm-1", "cm-2"])
    if kwargs.pop("continue", False):
        kwargs["_continue"] = core.list_namespaced_config_map(NS, limit=1).metadata._continue
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(NS, **kwargs)
    status = status_of(info.value)
    message = said[0] if len(said) == 1 else f"[{', '.join(said)}]"
    assert (info.value.status, status["reason"]) == (422, "Invalid"), info.value.body
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'
    assert (status["details"]["group"], status["details"]["kind"]) == ("meta.k8s.io", "ListOptions")
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == \
        [("resourceVersionMatch", s.split(": ", 1)[1]) for s in said]


def test_not_older_than_a_version_not_reached_is_504(core: client.CoreV1Api) -> None:
    """NotOlderThan N, N not reached: etcd (a limit) answers 504 at once, the watch cache (no limit) with
    retryAfterSeconds 1; at the current version the list is the latest. Before, kubesim listed at its version (200)."""
    make(core, ["cm-0", "cm-1", "cm-2"])
    rv = int(core.list_namespaced_config_map(NS).metadata.resource_version)
    for limit, retry in ((2, None), (None, 1)):
        with pytest.raises(ApiException) as info:
            core.list_namespaced_config_map(NS, resource_version=str(rv + 1000), resource_version_match="NotOlderThan",
                                            **({"limit": limit} if limit else {}))
        status = status_of(info.value)
        assert (info.value.status, status["reason"]) == (504, "Timeout"), info.value.body
        assert status["message"] == f"Timeout: Too large resource version: {rv + 1000}, current: {rv}"
        assert status["details"].get("retryAfterSeconds") == retry
        assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}]
    latest = core.list_namespaced_config_map(NS, resource_version=str(rv), resource_version_match="NotOlderThan",
                                             limit=2)
    assert (names([latest]), latest.metadata.resource_version) == (["cm-0", "cm-1"], str(rv))


def test_a_watch_with_a_resource_version_match_is_422(core: client.CoreV1Api) -> None:
    """validateWatchOptions: no resourceVersionMatch on a watch. Before, kubesim opened the watch."""
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(NS, watch=True, resource_version="1", resource_version_match="NotOlderThan",
                                        timeout_seconds=1, _preload_content=False)
    assert (info.value.status, status_of(info.value)["message"]) == \
        (422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is '
              'forbidden for watch'), info.value.body
