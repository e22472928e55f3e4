"""What a real API server answers for a list without `limit` and for a malformed `resourceVersion`, through the real
`kubernetes` client. Lists: in etcd key order (/registry/<resource>/<namespace>/<name>), as the etcd3 store and the
watch cache (a B-tree keyed so) serve them, not in the order objects were created; a watch's initial ADDED events
too. A `resourceVersion` that is not an unsigned decimal, as kubesim's v1.30.0 answers it (kubernetes/apiserver
release-1.30): a list etcd serves (a `limit`, resourceVersionMatch Exact: Cacher.GetList delegates it) answers 400
BadRequest (the etcd3 store's resolveGetListRev); a list the watch cache serves (no `limit`, limit 0, NotOlderThan), a
watch or a get 500 (the watch cache's ParseResourceVersion error is no API status). From 1.33 every list is 400
(the cache's delegator runs storage.ValidateListOptions first; kubernetes issue #139485 shows that answer)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.testing import Sim

CREATED = [("a", "zed"), ("a-b", "mid"), ("default", "bee"), ("a", "ant"), ("default", "ale")]
# etcd key order of /registry/configmaps/<ns>/<name>: "a-b/" sorts before "a/" ('-' < '/'), so not (ns, name) order
KEY_ORDER = [("a-b", "mid"), ("a", "ant"), ("a", "zed"), ("default", "ale"), ("default", "bee")]


def get(api: client.ApiClient, path: str, rv: str) -> tuple[int, dict[str, Any]]:
    """GET `path` at `rv` through the real client's transport (its read_* methods take no resourceVersion)."""
    params = api.param_serialize(method="GET", resource_path=path, query_params=[("resourceVersion", rv)],
                                 auth_settings=["BearerToken"])
    resp = api.call_api(*params)
    resp.read()
    return resp.status, json.loads(resp.data)


@pytest.fixture
def core(kubesim: Sim) -> client.CoreV1Api:
    api = client.CoreV1Api(kubesim.api_client())
    for ns in ("a", "a-b"):
        api.create_namespace({"metadata": {"name": ns}})
    for ns, name in CREATED:
        api.create_namespaced_config_map(ns, {"metadata": {"name": name}, "data": {"k": name}})
    return api


def mine(items: list[Any]) -> list[tuple[str, str]]:
    return [(i.metadata.namespace, i.metadata.name) for i in items if (i.metadata.namespace, i.metadata.name)
            in CREATED]


@pytest.mark.parametrize("rv", [None, "0"])
def test_a_list_without_limit_is_in_key_order(core: client.CoreV1Api, rv: str | None) -> None:
    """Before: the store's insertion order (zed, mid, bee, ant, ale)."""
    kwargs = {"resource_version": rv} if rv is not None else {}
    assert mine(core.list_config_map_for_all_namespaces(**kwargs).items) == KEY_ORDER
    assert mine(core.list_namespaced_config_map("default", **kwargs).items) == [("default", "ale"), ("default", "bee")]
    assert mine(core.list_namespaced_config_map("a", **kwargs).items) == [("a", "ant"), ("a", "zed")]


def test_a_cluster_scoped_list_and_a_selector_list_are_in_key_order(core: client.CoreV1Api) -> None:
    for name in ("ns-c", "ns-a", "ns-b"):
        core.create_namespace({"metadata": {"name": name, "labels": {"t": "x"}}})
    assert [n.metadata.name for n in core.list_namespace(label_selector="t=x").items] == ["ns-a", "ns-b", "ns-c"]


def test_a_watchs_initial_events_are_in_key_order(core: client.CoreV1Api) -> None:
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_config_map_for_all_namespaces, timeout_seconds=1):
        assert ev["type"] == "ADDED"
        seen.append(ev["object"])
        if len(mine(seen)) == len(CREATED):
            w.stop()
    assert mine(seen) == KEY_ORDER


def status(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body)


MESSAGE = 'resourceVersion: Invalid value: "{rv}": strconv.ParseUint: parsing "{rv}": {why}'


@pytest.mark.parametrize(("rv", "why"), [("abc", "invalid syntax"), ("-1", "invalid syntax"), ("+5", "invalid syntax"),
                                         (" 5", "invalid syntax"), ("1_0", "invalid syntax"),
                                         ("18446744073709551616", "value out of range")])
def test_a_malformed_resource_version_on_a_list_etcd_serves_is_400(core: client.CoreV1Api, rv: str, why: str) -> None:
    """Before 243e62e: "invalid resource version 'abc'" with a limit."""
    for kwargs in ({"limit": 2}, {"resource_version_match": "Exact"}, {"limit": 2, "resource_version_match":
                                                                        "NotOlderThan"}):
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default", resource_version=rv, **kwargs)
        body = status(err.value)
        assert (err.value.status, body["reason"], body["message"]) == \
            (400, "BadRequest", "invalid resource version: " + MESSAGE.format(rv=rv, why=why)), kwargs


@pytest.mark.parametrize(("rv", "why"), [("abc", "invalid syntax"), ("-1", "invalid syntax"),
                                         ("18446744073709551616", "value out of range")])
def test_a_malformed_resource_version_on_a_list_the_watch_cache_serves_is_500(core: client.CoreV1Api, rv: str,
                                                                               why: str) -> None:
    """1.30's Cacher.GetList returns the parse error as is: 500, no reason, the field error's words (a table too).
    Before: 400 BadRequest "invalid resource version: ...", the answer of 1.33 and later."""
    for kwargs in ({}, {"limit": 0}, {"resource_version_match": "NotOlderThan"}):
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default", resource_version=rv, **kwargs)
        body = status(err.value)
        assert (err.value.status, body.get("reason"), body["message"], body["code"]) == \
            (500, None, MESSAGE.format(rv=rv, why=why), 500), kwargs
    with pytest.raises(ApiException) as err:
        core.list_config_map_for_all_namespaces(resource_version=rv, _request_timeout=10,
                                                _headers={"Accept": "application/json;as=Table;v=1;g=meta.k8s.io"})
    assert (err.value.status, status(err.value)["message"]) == (500, MESSAGE.format(rv=rv, why=why))


@pytest.mark.parametrize("rv", ["abc", "-1"])
def test_a_malformed_resource_version_on_a_watch_or_a_get_is_500(core: client.CoreV1Api, rv: str) -> None:
    """As a real API server answers (its watch cache's error is not an API status: code 500, no reason).
    Before: a watch failed inside kubesim (int("abc")); a get ignored the version (200)."""
    calls = [lambda: core.list_namespaced_config_map("default", watch=True, resource_version=rv,
                                                     timeout_seconds=1, _preload_content=False),
             ]
    for call in calls:
        with pytest.raises(ApiException) as err:
            call()
        body = status(err.value)
        assert (err.value.status, body.get("reason"), body["message"], body["status"]) == \
            (500, None, MESSAGE.format(rv=rv, why="invalid syntax"), "Failure")
    code, body = get(core.api_client, "/api/v1/namespaces/default/configmaps/ale", rv)
    assert (code, body.get("reason"), body["message"], body["code"]) == \
        (500, None, MESSAGE.format(rv=rv, why="invalid syntax"), 500)


def test_well_formed_resource_versions_still_list_watch_and_get(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    for given in ("", "0", rv, "0" + rv):  # ParseUint takes leading zeros
        core.list_namespaced_config_map("default", resource_version=given)
        code, body = get(core.api_client, "/api/v1/namespaces/default/configmaps/ale", given)
        assert (code, body["metadata"]["name"]) == (200, "ale")


def test_the_kept_list_order_follows_creates_and_deletes() -> None:
    """The store keeps the last list's order and merges in what changed since (so a list of many objects need not sort
    them all again): after any creates and deletes, each list is what sorting the keys anew gives."""
    import random

    from podtax_kubesim.store import Store, list_key

    store, rng, key = Store(), random.Random(5), "/configmaps"
    for step in range(600):
        ns, name = rng.choice(["a", "a-b", "b"]), f"cm-{rng.randrange(60)}"
        if store.get(key, ns, name) is None:
            store.create(key, {"metadata": {"name": name, "namespace": ns}})
        elif rng.random() < 0.5:
            store.delete(key, ns, name)
        if step % rng.choice([1, 3, 17]) == 0:
            for where in (None, "a", "a-b"):
                want = sorted((list_key(k, where), k) for k in store.objects[key] if where is None or k[0] == where)
                assert [k for k, _ in store.listed(key, where)] == [k for _, k in want], (step, where)
