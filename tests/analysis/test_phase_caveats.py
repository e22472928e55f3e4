"""The caveats the phase table prints beside a user's own numbers state what to know, never a figure
measured elsewhere (which the user's numbers may contradict)."""

from __future__ import annotations

import re

import pytest
from podtax import phases as ph


@pytest.mark.parametrize("key", sorted(ph.CAVEATS))
def test_a_caveat_quotes_no_measured_figure(key):
    caveat = ph.CAVEATS[key]
    assert not re.search(r"\d", caveat), f"{key}: {caveat}"


def test_the_provisioned_caveat_still_says_what_concurrency_bounds():
    caveat = ph.CAVEATS[("volume-churn", "provisioned")]
    assert "Nomad" in caveat and "at most `concurrency`" in caveat and "at that concurrency" in caveat


@pytest.mark.parametrize(("test", "name", "key"), [
    ("volume-churn", "pv_deleted", ("volume-churn", "pv_deleted")),
    ("volume-churn", "pv_deleted_p50_ms", ("volume-churn", "pv_deleted")),
    ("volume-churn", "pv_deleted_makespan_s", ("volume-churn", "pv_deleted")),
    ("volume-churn", "provisioned_p99_ms", ("volume-churn", "provisioned")),
    ("volume-churn", "deleted_p50_ms", None),  # Kubernetes' claim: not compared with Nomad
    ("volume-churn", "bound_p50_ms", None),
    ("volume-churn", "requests_per_object", None),
    ("pod-startup", "deleted_p50_ms", None),
])
def test_a_caveat_covers_its_phase_and_every_metric_of_it(test, name, key):
    assert ph.caveat(test, name) == (ph.CAVEATS[key] if key else None)


def test_the_delete_caveat_says_nomad_queues_deletes_at_the_concurrency():
    caveat = ph.CAVEATS[("volume-churn", "pv_deleted")]
    assert "Nomad serializes" in caveat and "per plugin" in caveat and "`concurrency` above one" in caveat
    assert "creates are not serialized" in caveat  # shared/reference: Create is not serialized
