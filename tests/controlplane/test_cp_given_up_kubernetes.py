"""A Kubernetes create or delete that never answers fails its one object as given up (a lower bound), not the run,
as Nomad's does (test_cp_given_up_nomad.py). No test planted a read timeout on Kubernetes: a claim's DELETE, which
urllib3 retries itself as idempotent, raised MaxRetryError once each retry timed out, which no handler took for an
object's error: the run failed ("Max retries exceeded ... Read timed out") and the end-of-run cleanup, deleting
the same claim, failed likewise. Against kubesim's planted hangs (faults hangCreates / hangDeletes,
tools/kubesim/README.md), through the real runner, the real kubernetes client and the timeline parser."""

from __future__ import annotations

from typing import Any

import pytest
from podtax.parsers import timeline as parser
from podtax_runner.controlplane import cleanup, common, kubeapi

from tests.controlplane.conftest import cluster, spec
from tests.controlplane.test_cp_given_up_nomad import _flagged

COUNT = 12
READ_S = 1.0  # a Kubernetes request's read timeout (60 s in a run; the same rule, shorter)


@pytest.fixture
def short_kube_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeapi, "TIMEOUT", (READ_S, READ_S))
    monkeypatch.setattr(common, "GIVE_UP_FLOOR_S", 1.0)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 1.0)  # the claim left behind is tried again in cleanup


# fault -> the claim it hangs, the phase it is given up in (and that phase's start), what its error starts with
CASES = {
    "create hangs": ({"hangCreates": ["persistentvolumeclaims/-0003"]}, "-0003", "provisioned", "request_sent",
                     "create: "),
    "delete hangs": ({"hangDeletes": ["persistentvolumeclaims/-0005"]}, "-0005", "pv_deleted", "delete_requested",
                     "delete: "),
}


@pytest.mark.parametrize("case", CASES)
def test_a_kubernetes_call_that_never_answers_counts_its_claim_as_a_lower_bound(
        case: str, kubesim_factory: Any, run_cp: Any, short_kube_timeouts: None,
        caplog: pytest.LogCaptureFixture) -> None:
    faults, suffix, phase, start, says = CASES[case]
    sim = kubesim_factory({**cluster(provision=0.01, delete=0.01), "faults": faults}, kubelet="simulated")
    tl = run_cp(spec("volume-churn", count=COUNT, concurrency=4, timeout=20), kube=sim)  # the run is not failed
    # a claim whose DELETE got no answer is not waited for again (its PV goes only once the claim is gone): the
    # delete wait waited a stall window (timeout / 10: 90 s at the examples' 900) for it, then gave it up again
    assert "stuck in the delete wait" not in caplog.text
    failed = {n: r for n, r in tl.objects.items() if r.error}
    assert [n[-5:] for n in failed] == [suffix], {n: r.error for n, r in failed.items()}
    stuck = next(iter(failed.values()))
    assert stuck.error.startswith(says) and "timed out" in stuck.error and "given up" in stuck.error, stuck.error
    took = stuck.t["given_up"] - stuck.t[start]
    assert took >= READ_S, stuck.t  # it waited its read timeout out
    # once: urllib3 re-sent a DELETE whose answer timed out, unseen, 3 times more (4 waits, 4 minutes in a run)
    assert took < 3 * READ_S, stuck.t
    parsed = parser.parse(tl.jsonl(), "volume-churn")
    assert parsed.values()[f"{phase}_max_ms"] == pytest.approx(took * 1000), parsed.values()
    assert {f"{phase}_p99_ms", f"{phase}_max_ms"} <= _flagged(parsed.flags), parsed.flags
    # the flag's example names a phase it counts (it named consumer_running, a phase of no object without consumers)
    flag = next(f for f in parsed.flags if f.startswith("LOWER_BOUND: "))
    named = flag.split("(first: ", 1)[1].split(", ", 1)[1].split(" ")[0]
    assert any(m.startswith(f"{named}_") for m in _flagged(parsed.flags)), flag
    assert parsed.values()["errors"] == 1 and parsed.values()["objects_ok"] == COUNT - 1, parsed.values()
    others = [r for n, r in tl.objects.items() if n not in failed]
    assert all("gone" in r.t and "pv_gone" in r.t for r in others)  # the other claims went their whole way


@pytest.mark.parametrize(("entry", "plural", "name", "hangs"), [
    ("-0003", "persistentvolumeclaims", "podtax-vc-x-0003", True),
    ("-0003", "pods", "podtax-vcc-x-0003", True),
    ("persistentvolumeclaims/-0003", "pods", "podtax-vcc-x-0003", False),
    ("persistentvolumeclaims/-0003", "persistentvolumeclaims", "podtax-vc-x-0004", False),
    ("-0003", "persistentvolumeclaims", "", False),  # generateName: no name to match
])
def test_the_hang_knob_matches_name_endings_of_one_resource(entry: str, plural: str, name: str, hangs: bool) -> None:
    from podtax_kubesim.faults import parse

    knob = parse({"faults": {"hangCreates": [entry], "hangDeletes": [entry]}})
    assert knob.hangs("create", plural, name) is hangs and knob.hangs("delete", plural, name) is hangs


@pytest.mark.parametrize("faults", [["-0003"], {"hangCreates": "-0003"}, {"hangCreates": [""]}, {"hangs": []}])
def test_a_malformed_hang_knob_is_refused(faults: Any) -> None:
    from podtax_kubesim.faults import parse

    with pytest.raises(ValueError, match="faults"):
        parse({"faults": faults})
