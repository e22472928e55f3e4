"""Kubernetes cleanup against an API whose list of one resource never answers (kubesim's fault hangLists). Before,
its list calls had no deadline of their own: a hung list held the cleanup a read timeout (60 s) past its wait, then
raised out of it, so what came after (the claims, after the pods) was neither deleted nor said, and `podtax volumes
cleanup` blamed the address ("could not clean up kubernetes (...): MaxRetryError ...; pass --kubeconfig FILE").
Now each call of the cleanup ends by its deadline, a list that gets no answer is said with what it left, and the
cleanup goes on. Real kubesim, the real kubernetes client."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kconfig
from podtax_runner.controlplane import cleanup, common, kubeapi
from podtax_runner.controlplane.common import object_name
from podtax_runner.controlplane.kubeapi import Kube
from podtax_runner.volumes_cli import main as volumes

from tests.controlplane.conftest import cluster

CAMPAIGN = "hung-list"
CLAIMS = [object_name("vc", CAMPAIGN, f"{CAMPAIGN}/r1", i) for i in (1, 2)]


def _sim(kubesim_factory: Any, hang: str) -> Any:
    """kubesim whose lists of `hang` never answer, with CLAIMS of CAMPAIGN (Bound)."""
    sim = kubesim_factory({**cluster(), "faults": {"hangLists": [hang]}}, kubelet="none")
    labels = {common.LABEL_KIND: common.KIND, common.LABEL_CAMPAIGN: CAMPAIGN}
    for name in CLAIMS:
        sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "labels": labels},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    sim.wait_for(lambda: len(sim.objects("persistentvolumes")) == len(CLAIMS))
    return sim


def _kube(kubeconfig: Any) -> Kube:
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return Kube(kubeapi.api_client(cfg))


def test_a_hung_pod_list_leaves_the_claims_deleted_and_says_what_it_left(
        kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(kubeapi, "TIMEOUT", (1.0, 1.0))  # 60 s in use; the same rule, shorter
    sim = _sim(kubesim_factory, "pods")
    # in-process (what `podtax volumes` runs in a child), so the shorter timeout holds
    code = volumes(["cleanup", "--backend", "kubernetes", "--campaign", CAMPAIGN, "--kubeconfig", str(sim.kubeconfig)])
    out, err = capfd.readouterr()
    assert sim.objects("persistentvolumeclaims") == [], (out, err)  # before: the pods' list ended it, claims stayed
    for name in CLAIMS:
        assert f"removed persistentvolumeclaim default/{name}" in out, out
    assert (f"not cleaned: pods of {common.selector(CAMPAIGN)} in every namespace: not listed, the list got no answer "
            f"in time (ReadTimeoutError") in err, err
    assert "none of them was deleted: they may stay" in err, err
    assert "list(s) not answered in time: not everything was cleaned" in out, out
    assert "--kubeconfig" not in err, err  # the API answered the other calls: the address is not the problem
    assert code == 1


def test_a_hung_list_ends_by_the_cleanups_own_wait(kubesim_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the client's read timeout as in use (60 s), the cleanup's wait bounds its lists (each given at least
    READ_MIN_S, 5 s in use): the PVs' list hangs, the claims are deleted, and whether their PVs went is said unknown
    (before: 60 s, then MaxRetryError)."""
    monkeypatch.setattr(kubeapi, "READ_MIN_S", 0.5)
    sim = _sim(kubesim_factory, "persistentvolumes")
    removed = cleanup.kubernetes(_kube(sim.kubeconfig), None, common.selector(CAMPAIGN), wait_s=3.0)
    assert sorted(removed.names) == [f"persistentvolumeclaim default/{n}" for n in CLAIMS], removed
    assert len(removed.unlisted) >= 1, removed
    assert all(line.startswith(("persistent volumes whose claim", "the persistent volumes of the deleted claims"))
               for line in removed.unlisted), removed.unlisted
    assert any("the persistent volumes of the deleted claims: not listed" in line
               and "whether they are gone is not known: they may stay" in line for line in removed.unlisted), removed
