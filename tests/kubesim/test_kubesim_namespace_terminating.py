"""kubesim's NamespaceLifecycle: a create in a namespace held Terminating (its DELETE came while a finalizer holds
it) is refused 403 as the API server words it (staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle:
message 'unable to create new content in namespace <ns> because it is being terminated', cause NamespaceTerminating
'namespace <ns> is being terminated' on metadata.namespace). Review r4: kubesim's cause said 'is currently being
terminated'. Real kubernetes client against kubesim."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from podtax_kubesim.testing import Sim


def test_a_create_in_a_terminating_namespace_is_refused_in_the_api_servers_words(kubesim: Sim) -> None:
    core = client.CoreV1Api(kubesim.api_client())
    core.create_namespace({"metadata": {"name": "going", "finalizers": ["example.com/hold"]}})
    core.delete_namespace("going")
    assert core.read_namespace("going").status.phase == "Terminating"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("going", {"metadata": {"name": "c"}})
    status = json.loads(err.value.body)
    assert err.value.status == 403 and status["reason"] == "Forbidden", status
    assert status["message"] == ('configmaps "c" is forbidden: unable to create new content in namespace going '
                                 "because it is being terminated"), status
    assert status["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                            "message": "namespace going is being terminated"}], status
