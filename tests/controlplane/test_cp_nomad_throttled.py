"""A Nomad volume's DELETE answered 429 (Nomad's connection limit: nothing done) is sent again as patiently as on
Kubernetes (review r9 of 9ea66572: Kubernetes sends such a call up to kubeapi.THROTTLED_ATTEMPTS times, Nomad 3,
so a DELETE throttled 3 times in a row failed its volume on Nomad only), and a `volume not found` after such
answers is the volume deleted by another client (gone early), as 058af689 did for Kubernetes. Real executor
against nomadsim's failRequests; the other client deregisters the volume over HTTP from a thread."""

from __future__ import annotations

from typing import Any

import httpx

from tests.controlplane.conftest import another_client, spec

THROTTLED = [{"request": "DELETE /v1/volume/csi/:id/delete", "status": 429, "times": 3}]
RUN = spec("volume-churn", env="nomad", count=2, concurrency=1, timeout=60, plugin_id="hostpath")


def test_a_delete_throttled_3_times_in_a_row_is_sent_again(nomadsim_factory: Any, run_cp: Any) -> None:
    nomad = nomadsim_factory({"faults": {"failRequests": THROTTLED}})
    tl = run_cp(RUN, nomad=nomad)
    assert {n: r.error for n, r in tl.objects.items() if r.error} == {}
    assert all("gone" in r.t for r in tl.objects.values()) and nomad.volumes() == []
    assert list(tl.retried.values()) == ["delete: 429 Your IP is issuing too many concurrent connections, please "
                                         "rate limit your calls"], tl.retried


def test_a_volume_deleted_by_another_while_its_delete_was_throttled_is_gone_early(nomadsim_factory: Any,
                                                                                  run_cp: Any) -> None:
    nomad = nomadsim_factory({"faults": {"failRequests": THROTTLED}})

    def deregister_once_throttled() -> str | None:  # once the run's first DELETE got its 429, deregister that volume
        metrics = httpx.get(f"{nomad.url}/v1/metrics", params={"format": "prometheus"}).text
        if not any('"429"' in line and "delete" in line for line in metrics.splitlines() if line[:1] != "#"):
            return None
        (vol,) = [v["ID"] for v in nomad.volumes() if v["ID"].endswith("-0001")]
        httpx.delete(f"{nomad.url}/v1/volume/csi/{vol}").raise_for_status()
        return vol

    with another_client(deregister_once_throttled, 0.02) as deleted:
        tl = run_cp(RUN, nomad=nomad)
    (name,) = [n for n in tl.objects if n.endswith("-0001")]
    assert deleted == [name]
    assert tl.objects[name].error is not None and "not by this run" in tl.objects[name].error, tl.objects[name]
    assert [n for n, r in tl.objects.items() if r.error] == [name], tl.objects
