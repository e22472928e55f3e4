"""A namespace's deletion as the API server and the namespace controller make it: its create puts `kubernetes` in
spec.finalizers; its DELETE answers it in phase Terminating (deletionTimestamp set), held there while its objects go
(each deleted as a DELETE deletes it: an object's own finalizer holds it, and the namespace with it), a create in it
answered 403 'unable to create new content in namespace <ns> because it is being terminated'; once it is empty,
`kubernetes` goes and so does the namespace. Before, kubesim deleted a namespace held by spec.finalizers alone at
once, with every object in it whatever its finalizers: a create right after the DELETE got 404, and an object held by
a finalizer was gone. Real kubernetes client against kubesim."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.testing import Sim

HOLD = "example.com/hold"


def _gone(core: client.CoreV1Api, ns: str) -> bool:
    try:
        core.read_namespace(ns)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_a_deleted_namespace_is_terminating_until_its_objects_are_gone(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    made = core.create_namespace({"metadata": {"name": "life"}, "spec": {"finalizers": []}})
    assert made.spec.finalizers == ["kubernetes"]  # always added at its create
    core.create_namespaced_config_map("life", {"metadata": {"name": "held", "finalizers": [HOLD]}})
    core.create_namespaced_config_map("life", {"metadata": {"name": "free"}})
    core.delete_namespace("life")
    ns = core.read_namespace("life")  # before: 404, deleted at once with its objects
    assert ns.status.phase == "Terminating" and ns.metadata.deletion_timestamp is not None, ns
    kubesim.wait_for(lambda: [c.metadata.name for c in core.list_namespaced_config_map("life").items] == ["held"])
    held = core.read_namespaced_config_map("held", "life")
    assert held.metadata.deletion_timestamp is not None and held.metadata.finalizers == [HOLD], held.metadata
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("life", {"metadata": {"name": "late"}})
    assert err.value.status == 403 and "because it is being terminated" in err.value.body, err.value.body
    assert core.read_namespace("life").spec.finalizers == ["kubernetes"]
    core.patch_namespaced_config_map("held", "life", {"metadata": {"finalizers": None}})
    kubesim.wait_for(lambda: _gone(core, "life"))


def test_an_empty_namespace_deleted_goes_once_finalized(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "empty"}})
    answer = json.loads(core.delete_namespace("empty", _preload_content=False).data)
    assert answer["status"]["phase"] == "Terminating", answer  # the DELETE's answer: held by `kubernetes`
    kubesim.wait_for(lambda: _gone(core, "empty"))
    core.create_namespace({"metadata": {"name": "empty"}})  # the name is free again


def test_a_namespace_held_by_its_own_finalizer_stays_once_empty(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "kept", "finalizers": [HOLD]}})
    core.delete_namespace("kept")
    kubesim.wait_for(lambda: not core.read_namespace("kept").spec.finalizers)  # `kubernetes` removed: it is empty
    assert core.read_namespace("kept").status.phase == "Terminating"
    core.patch_namespace("kept", {"metadata": {"finalizers": None}})
    kubesim.wait_for(lambda: _gone(core, "kept"))


def test_spec_finalizers_change_through_finalize_only(kubesim: Sim) -> None:
    """An update keeps spec.finalizers (the API server's namespace strategy); PUT .../finalize sets them: emptied on a
    namespace stuck Terminating (an admin's way out), it goes, the object that held it with it unreachable."""
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "stuck"}})
    core.patch_namespace("stuck", {"spec": {"finalizers": []}, "metadata": {"labels": {"a": "b"}}})
    patched = core.read_namespace("stuck")
    assert patched.spec.finalizers == ["kubernetes"] and patched.metadata.labels["a"] == "b", patched
    core.create_namespaced_config_map("stuck", {"metadata": {"name": "held", "finalizers": [HOLD]}})
    core.delete_namespace("stuck")
    kubesim.wait_for(lambda: core.read_namespaced_config_map("held", "stuck").metadata.deletion_timestamp)
    assert core.read_namespace("stuck").status.phase == "Terminating"
    core.replace_namespace_finalize("stuck", {"metadata": {"name": "stuck"}, "spec": {"finalizers": []}})
    kubesim.wait_for(lambda: _gone(core, "stuck"))
