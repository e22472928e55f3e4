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


def test_a_terminating_namespace_says_what_holds_it(kubesim: Sim) -> None:
    """The namespace controller's conditions (status_condition_utils.go): what remains and which finalizers hold it
    (before: none, a namespace stuck Terminating said nothing); a second DELETE answers it as it is (200: 1.30's
    namespace storage returns the namespace; 409 'The system is ensuring all content is removed...' was older)."""
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "told"}})
    core.create_namespaced_config_map("told", {"metadata": {"name": "held", "finalizers": [HOLD]}})
    core.delete_namespace("told")
    kubesim.wait_for(lambda: core.read_namespace("told").status.conditions)
    said = {c.type: (c.status, c.reason, c.message) for c in core.read_namespace("told").status.conditions}
    assert said == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": ("False", "ParsedGroupVersions",
                                                        "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": ("False", "ContentDeleted",
                                            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain",
                                      "Some resources are remaining: configmaps. has 1 resource instances"),
        "NamespaceFinalizersRemaining": ("True", "SomeFinalizersRemain", "Some content in the namespace has "
                                         f"finalizers remaining: {HOLD} in 1 resource instances")}, said
    again = json.loads(core.delete_namespace("told", _preload_content=False).data)
    assert again["status"]["phase"] == "Terminating" and again["spec"]["finalizers"] == ["kubernetes"], again
    core.patch_namespaced_config_map("held", "told", {"metadata": {"finalizers": None}})
    kubesim.wait_for(lambda: _gone(core, "told"))


def test_a_namespace_finalized_before_its_delete_is_left_terminating(kubesim: Sim) -> None:
    """spec.finalizers emptied through `finalize` while Active: its DELETE still answers it Terminating (the first
    DELETE always does), and the namespace controller leaves an already finalized namespace alone, so its object is
    not deleted (before: the DELETE answered phase Active, the namespace gone at once with the object, its finalizer
    ignored); a second DELETE removes it, the object left behind (as a cluster leaves it in etcd)."""
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "bare"}})
    core.create_namespaced_config_map("bare", {"metadata": {"name": "held", "finalizers": [HOLD]}})
    core.replace_namespace_finalize("bare", {"metadata": {"name": "bare"}, "spec": {"finalizers": []}})
    answer = json.loads(core.delete_namespace("bare", _preload_content=False).data)
    assert answer["status"]["phase"] == "Terminating" and answer["metadata"]["deletionTimestamp"], answer
    kubesim.call(lambda: None)  # the controller's turn on the loop has come
    assert core.read_namespace("bare").status.phase == "Terminating"
    held = kubesim.get("configmaps", "held", "bare")
    assert held is not None and not held["metadata"].get("deletionTimestamp"), held
    core.delete_namespace("bare")
    assert _gone(core, "bare")
    assert [o["metadata"]["name"] for o in kubesim.objects("configmaps", "bare")] == ["held"]
