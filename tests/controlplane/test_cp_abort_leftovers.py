"""A Kubernetes run that fails says in its failure what its cleanup left and how to remove it, as a Nomad run's does
(nvolumes._clean_run). Before, the failure read "... Stopped and removed what was created" while claims whose deletes
got no answer stayed: the count and the command were only in the runner's log, and the stored failure said all was
removed. Against kubesim's planted hangs (faults hangDeletes), through the real runner and the real client."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, ours, spec
from tests.controlplane.test_cp_given_up_kubernetes import short_kube_timeouts  # noqa: F401 - a fixture
from tests.controlplane.test_cp_given_up_nomad import PLUGIN, short_nomad_timeouts  # noqa: F401 - a fixture

ELEVEN = [f"-{i:04d}" for i in range(1, 12)]  # one more than a run of 20 may lose: max(10, 10 %)


def test_a_failed_kubernetes_run_says_what_its_cleanup_left(kubesim_factory: Any, run_cp: Any,
                                                             short_kube_timeouts: None) -> None:  # noqa: F811
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01),
                           "faults": {"hangDeletes": [f"persistentvolumeclaims/{e}" for e in ELEVEN]}},
                          kubelet="none")
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", campaign="abl", count=20, concurrency=4, timeout=60), kube=sim)
    detail = info.value.detail
    assert info.value.reason == "api-no-answer", detail
    stayed = [c["metadata"]["name"] for c in ours(sim, "persistentvolumeclaims")]
    assert stayed, "the planted hangs left no claim: the case tests nothing"
    left = len(stayed) + len(ours(sim, "persistentvolumes"))  # the claims and their PVs
    assert f"; {left} object(s) still present after the cleanup's " in detail, detail
    assert "remove them with `podtax volumes cleanup --backend kubernetes --campaign abl`" in detail, detail
    assert f"persistentvolumeclaim podtax-runs/{sorted(stayed)[0]}: its delete got no answer in time" in detail, \
        detail


def test_a_failed_nomad_run_says_what_its_cleanup_left(nomadsim_factory: Any, run_cp: Any,
                                                        short_nomad_timeouts: None) -> None:  # noqa: F811
    """The same words on Nomad (they were said there already)."""
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"hangDeletes": ELEVEN}})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="abl", count=20, concurrency=4, timeout=60,
                    plugin_id="hostpath"), nomad=sim)
    detail = info.value.detail
    stayed = len(sim.volumes())
    assert stayed and f"; {stayed} volume(s) still present after the cleanup's " in detail, detail
    assert "remove them with `podtax volumes cleanup --backend nomad --campaign abl`" in detail, detail
