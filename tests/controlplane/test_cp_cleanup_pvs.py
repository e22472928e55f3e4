"""`podtax volumes cleanup` and PVs whose podtax claim is gone (audit i, finding 8: 7 Released PVs of
podtax-runs/podtax-vc-*-0013 stayed while the command printed "removed 0 object(s)" and exited 0): it
deletes them, or says which stay and why, and never reports nothing left while they remain. With --campaign C it
deletes those whose claim's name carries C's token (common.object_name) and says those of the old naming, which
carry none.

The slow PV's provisioner never finishes on its own (delete seconds `inf`) but when a test lets it: with 5 s on a
timer from the claim's deletion, the PV was gone before the command, starting on a machine at load 4+, listed it
(seen once: 'removed 1 object(s)')."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client
from kubernetes import config as kconfig
from podtax.cli.main import main as cli
from podtax_runner.controlplane import cleanup, common
from podtax_runner.controlplane.common import object_name
from podtax_runner.controlplane.kubeapi import Kube
from podtax_runner.controlplane.timeline import Timeline

from tests.controlplane.conftest import CLASS, cluster

RETAINED, SLOW = "podtax-vc-0123456789-0001", "podtax-vc-0123456789-0002"  # the old naming: no campaign token
OF_A, OF_B = object_name("vc", "camp-a", "camp-a/r1", 3), object_name("vc", "camp-b", "camp-b/r1", 3)
KEEP = {"storageClassName": "keep"}


def core_api(kubeconfig: Any) -> client.CoreV1Api:
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


def released(kubesim_factory: Any, delete_seconds: str,
             claims: dict[str, tuple[str, dict[str, str]]] | None = None) -> Any:
    """Podtax claims deleted behind the run's back, their PVs Released: name -> (campaign, extra spec). By
    default two of campaign `old`: one of a class that keeps its volumes (Retain), one whose provisioner takes
    `delete_seconds` to delete it (`inf`: until the test lets it, finished_once_deleted)."""
    claims = claims or {RETAINED: ("old", KEEP), SLOW: ("old", {})}
    doc = cluster()
    doc["storageClasses"] = [*doc["storageClasses"], {**CLASS, "metadata": {"name": "keep"}, "reclaimPolicy": "Retain"}]
    sim = kubesim_factory(doc, kubelet="none")
    for name, (campaign, extra) in claims.items():
        labels = {common.LABEL_KIND: common.KIND, common.LABEL_CAMPAIGN: campaign}
        sim.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "labels": labels,
                                 "annotations": {"podtax.io/sim-delete-seconds": delete_seconds}},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                             **extra}})
    core = core_api(sim.kubeconfig)
    sim.wait_for(lambda: len([pv for pv in sim.objects("persistentvolumes")
                              if pv["status"]["phase"] == "Bound"]) == len(claims))
    for name in claims:
        core.delete_namespaced_persistent_volume_claim(name, "default")
    sim.wait_for(lambda: [pv["status"]["phase"] for pv in sim.objects("persistentvolumes")]
                 == ["Released"] * len(claims))
    return sim


def pv_of(sim: Any, claim: str) -> str:
    return next(pv["metadata"]["name"] for pv in sim.objects("persistentvolumes")
                if pv["spec"]["claimRef"]["name"] == claim)


@contextmanager
def finished_once_deleted(sim: Any, claim: str) -> Iterator[None]:
    """The provisioner of the PV of `claim` (delete seconds `inf`) finishes deleting it 0.5 s after someone deleted
    the PV, not before: the PV is there whenever a cleanup lists it, and a cleanup that does not wait leaves it."""
    name, done = pv_of(sim, claim), threading.Event()

    def finish() -> None:
        while not done.wait(0.02):
            if ((sim.get("persistentvolumes", name) or {}).get("metadata") or {}).get("deletionTimestamp"):
                if not done.wait(0.5):
                    sim.finish_volume_deletion(name)
                return

    thread = threading.Thread(target=finish, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("args,code,removed,stays", [
    ([], 0, [RETAINED, SLOW], []),  # every podtax run's: both PVs deleted (the slow one waited for)
    (["--campaign", "old"], 1, [], [RETAINED, SLOW]),  # an old name carries no campaign: said, and left alone
])
def test_cleanup_deletes_or_names_the_pvs_of_gone_podtax_claims(kubesim_factory: Any, capfd: pytest.CaptureFixture[str],
                                                                args: list[str], code: int, removed: list[str],
                                                                stays: list[str]) -> None:
    sim = released(kubesim_factory, "inf")
    pvs = {claim: pv_of(sim, claim) for claim in (RETAINED, SLOW)}
    with finished_once_deleted(sim, SLOW):
        assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig), *args]) \
            == code
    out, err = capfd.readouterr()
    for claim in removed:
        assert f"removed persistentvolume {pvs[claim]} (of claim default/{claim}, which was gone)" in out, out
    for claim in stays:
        policy = "Retain" if claim == RETAINED else "Delete"
        assert f"still present: persistentvolume {pvs[claim]} (Released; reclaim policy {policy}) of claim " \
            f"default/{claim}, which is gone" in err, err
        assert f"--campaign leaves it, as which campaign it was cannot be told (a PV carries no labels, and its " \
            f"claim's name, of the naming before campaign tokens, holds only a hash of the run id, which is " \
            f"one-way); remove it alone with `kubectl delete persistentvolume {pvs[claim]}`, or with every podtax " \
            f"leftover in namespace default, of any campaign, " \
            f"with `podtax volumes cleanup --backend kubernetes --namespace default` (same --kubeconfig; " in err, err
    assert f"kubernetes: removed {len(removed)} object(s)" + (f", {len(stays)} still present" if stays else "") in out
    assert sorted(pv["spec"]["claimRef"]["name"] for pv in sim.objects("persistentvolumes")) == sorted(stays)


def test_a_pv_its_provisioner_never_deletes_is_said_with_why(kubesim_factory: Any) -> None:
    sim = released(kubesim_factory, "inf")
    out = cleanup.kubernetes(Kube(sim.api_client()), None, common.selector(), wait_s=1)
    stuck = pv_of(sim, SLOW)
    assert out.left == 1 and out.remaining == [
        f"persistentvolume {stuck} (deleting, held by finalizers external-provisioner.volume.kubernetes.io/finalizer; "
        f"reclaim policy Delete) of claim default/{SLOW}"]


def test_a_cleanup_counts_no_request_of_the_run(kubesim_factory: Any) -> None:
    """A run's cleanup (kvolumes, podstartup) is handed the run's counted Kube; its LISTs while it waits for a PV
    made requests_per_object 24.2 against 2.3 (audit i, finding 10). They are not the run's work."""
    sim = released(kubesim_factory, "inf")
    timeline = Timeline("volume-churn", "kubernetes", {}, "watch")
    with finished_once_deleted(sim, SLOW):
        out = cleanup.kubernetes(Kube(sim.api_client(), timeline), None, common.selector(), wait_s=30)
    assert len(out.names) == 2 and out.left == 0  # it did its work...
    assert sum(timeline.requests.values()) == 0, timeline.requests  # ...and counted none of it


def test_the_command_named_for_a_pv_of_unknown_campaign_removes_it(kubesim_factory: Any,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    """--campaign cannot tell a gone claim's campaign (its name holds sha1(run id)[:10], one-way; the namespace is
    shared): it leaves the PVs and names the command that removes them; that command, as printed, does."""
    sim = released(kubesim_factory, "inf")
    kubeconfig = ["--kubeconfig", str(sim.kubeconfig)]
    assert cli(["volumes", "cleanup", "--backend", "kubernetes", "--campaign", "old", *kubeconfig]) == 1
    err = capfd.readouterr().err
    named = {line.split("`podtax ", 1)[1].split("`", 1)[0] for line in err.splitlines() if "`podtax " in line}
    assert named == {"volumes cleanup --backend kubernetes --namespace default"}, err
    assert len(sim.objects("persistentvolumes")) == 2  # nothing deleted that is not provably the campaign's
    with finished_once_deleted(sim, SLOW):
        assert cli([*named.pop().split(), *kubeconfig]) == 0
    sim.wait_for(lambda: sim.objects("persistentvolumes") == [])


@pytest.mark.parametrize("campaign,mine,theirs", [("camp-a", OF_A, OF_B), ("camp-b", OF_B, OF_A)])
def test_campaign_deletes_its_own_retained_pvs_only(kubesim_factory: Any, capfd: pytest.CaptureFixture[str],
                                                    campaign: str, mine: str, theirs: str) -> None:
    """Two campaigns in one namespace each leave a Retain PV, beside one of the old naming: --campaign removes the
    PV whose claim's name carries its token, leaves the other campaign's untouched and unsaid, and names the
    commands for the old one, which it does not delete."""
    sim = released(kubesim_factory, "0", {OF_A: ("camp-a", KEEP), OF_B: ("camp-b", KEEP), RETAINED: ("old", KEEP)})
    pvs = {claim: pv_of(sim, claim) for claim in (OF_A, OF_B, RETAINED)}
    args = ["volumes", "cleanup", "--backend", "kubernetes", "--kubeconfig", str(sim.kubeconfig)]
    assert cli([*args, "--campaign", campaign]) == 1  # the old one stays
    out, err = capfd.readouterr()
    assert f"removed persistentvolume {pvs[mine]} (of claim default/{mine}, which was gone)" in out, out
    assert "kubernetes: removed 1 object(s), 1 still present" in out, out
    assert pvs[theirs] not in out + err and theirs not in out + err
    assert f"still present: persistentvolume {pvs[RETAINED]} (Released; reclaim policy Retain) of claim " \
        f"default/{RETAINED}, which is gone: --campaign leaves it" in err, err
    assert f"`kubectl delete persistentvolume {pvs[RETAINED]}`" in err, err
    left = sorted(pv["spec"]["claimRef"]["name"] for pv in sim.objects("persistentvolumes"))
    assert left == sorted([theirs, RETAINED])
