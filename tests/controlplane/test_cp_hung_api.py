"""A run whose API stops answering mid-run ends saying so, not that the API refused: each call that got no answer
in time gives its object up (a lower bound), and once more than max(10, 10 %) of the objects failed, the run ended
with "the API refused 11 of 20 requests" although nothing was refused. Now the reason and its words tell refusals
(4xx, 5xx: api-errors, "refused") from calls left unanswered (api-no-answer, "did not answer ... in time", "given up
as lower bounds"), and a run with both says both. Against kubesim's and nomadsim's planted hangs (faults
hangCreates / hangDeletes) and refusals, through the real runner and the real clients."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, spec
from tests.controlplane.test_cp_cleanup import refuse_claims_after
from tests.controlplane.test_cp_given_up_kubernetes import short_kube_timeouts  # noqa: F401 - a fixture
from tests.controlplane.test_cp_given_up_nomad import PLUGIN, short_nomad_timeouts  # noqa: F401 - a fixture

COUNT = 20
ELEVEN = [f"-{i:04d}" for i in range(1, 12)]  # one more than a run of 20 may lose: max(10, 10 %)
CLAIMS = [f"persistentvolumeclaims/{end}" for end in ELEVEN]
HUNG = "the API did not answer 11 of 20 requests in time (the 11 unanswered were given up as lower bounds; last: "

# case -> kubesim's faults, claims refused after the first n (None: none), the reason, how the detail starts
KUBERNETES = {
    "creates hang": ({"hangCreates": CLAIMS}, None, "api-no-answer", HUNG + "create: "),
    "deletes hang": ({"hangDeletes": CLAIMS}, None, "api-no-answer", HUNG + "delete: "),
    "creates refused": ({}, 9, "api-errors", "the API refused 11 of 20 requests (last: create: 403 Forbidden: "
                        "exceeded quota: podtax-test); "),
    "both": ({"hangDeletes": CLAIMS[:6]}, 15, "api-errors", "the API refused 5 and did not answer 6 of 20 requests "
             "in time (the 6 unanswered were given up as lower bounds; last: delete: "),
}


@pytest.mark.parametrize("case", KUBERNETES)
def test_a_kubernetes_run_that_fails_says_whether_the_api_refused_or_did_not_answer(
        case: str, kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch,
        short_kube_timeouts: None) -> None:  # noqa: F811 - the fixture
    faults, refuse_after, reason, says = KUBERNETES[case]
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01), "faults": faults}, kubelet="simulated")
    if refuse_after is not None:
        refuse_claims_after(sim, monkeypatch, refuse_after)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=COUNT, concurrency=4, timeout=60), kube=sim)
    detail = info.value.detail
    assert info.value.reason == reason and detail.startswith(says), (info.value.reason, detail)
    assert detail.endswith("stopped, deleting what it created") or "? The run stopped, deleting what it created" \
        in detail, detail  # the cleanup comes after these words: they said 'removed what was created' (review r2)
    if reason == "api-no-answer":
        assert "refused" not in detail, detail  # before: "the API refused 11 of 20 requests"
    if not faults:
        assert "answer" not in detail and "given up" not in detail, detail


def test_a_nomad_that_stops_answering_deletes_ends_the_run_saying_so(nomadsim_factory: Any, run_cp: Any,
                                                                     short_nomad_timeouts: None) -> None:  # noqa: F811
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"hangDeletes": ELEVEN}})
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="hang", count=COUNT, concurrency=4, timeout=60,
                    plugin_id="hostpath"), nomad=sim)
    detail = info.value.detail
    assert info.value.reason == "api-no-answer", detail
    assert detail.startswith("Nomad did not answer 11 of 20 requests in time (the 11 unanswered were given up as "
                             "lower bounds; last: delete: "), detail  # before: "Nomad refused 11 of 20 requests"
    assert "refused" not in detail, detail
