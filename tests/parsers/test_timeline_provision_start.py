"""Where volume-churn's provisioned and bound start on Kubernetes (review r9 H1, M1): at the claim's `node_selected`
only in a run whose summary says `provision_start: node` (the executor writes it when the run's class is
WaitForFirstConsumer); at its create otherwise, `node_selected` ignored (the external-provisioner in --node-deployment
mode writes the annotation on Immediate claims too, after a wait that is their provisioning); and a consumer run that
says neither (a timeline written before the marker, or a class the run could not read) has no provisioned or bound
figure: it may hold the consumer pod's scheduling (WaitForFirstConsumer timed from the create) or lack the
provisioner's wait (Immediate timed from the annotation). Hand-made timelines, the values by hand."""

from __future__ import annotations

from typing import Any

import pytest
from podtax import phases as ph
from podtax.parsers.timeline_records import read

from tests.parsers.test_timeline import header, lines, obj, summary, values

T = {"request_sent": 0.0, "api_accepted": 0.01, "node_selected": 0.3, "pv_created": 0.4, "bound": 0.5,
     "consumer_running": 0.7, "delete_requested": 1.0, "gone": 1.1, "pv_gone": 1.2}


def log(consumer: bool, **summary_extra: Any) -> str:
    head = header()
    head["params"] = {"count": 1, "consumer": consumer}
    return lines(head, obj("podtax-vc-r1-0001", dict(T)), summary(**summary_extra))


@pytest.mark.parametrize(("start", "provisioned", "bound"), [("node", 100.0, 200.0), ("create", 400.0, 500.0)])
def test_the_summary_says_where_provisioning_starts(start: str, provisioned: float, bound: float) -> None:
    v = values(log(True, provision_start=start, volume_binding_mode="x"))
    assert v["provisioned_max_ms"] == pytest.approx(provisioned)
    assert v["bound_max_ms"] == pytest.approx(bound)


def test_a_consumer_run_without_the_marker_has_no_provisioned_or_bound() -> None:
    v = values(log(True))
    assert not any(k.startswith(("provisioned_", "bound_")) for k in v), sorted(v)
    assert v["consumer_running_max_ms"] == pytest.approx(700.0) and v["deleted_max_ms"] == pytest.approx(100.0)
    # the executor's None (a consumer run whose class could not be read) likewise
    assert not any(k.startswith("provisioned_") for k in values(log(True, provision_start=None)))


def test_a_run_without_consumer_and_without_the_marker_is_timed_from_the_create() -> None:
    timeline = read(log(False))
    t = timeline.objects[0].t
    assert ph.NODE_SELECTED not in t and t[ph.PROVISION_START] == 0.0
    assert values(log(False))["provisioned_max_ms"] == pytest.approx(400.0)
