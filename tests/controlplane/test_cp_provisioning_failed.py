"""A claim given up Pending quotes why: its newest event, the external provisioner's Warning ProvisioningFailed
(kubesim's podtax.io/sim-provision-error), read with the field selector kubectl describe uses; when the runner may not
list events (RBAC's 403), its error says so in one phrase naming the rule to grant, and the run goes on. The real
runner and kubernetes client against kubesim. Before, the error said only `not Bound after 10.0 s ...`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from podtax.parsers import timeline as parser

from tests.controlplane.conftest import cluster, leftovers, spec

ERROR = "rpc error: code = ResourceExhausted desc = quota exceeded"


def fail_provisioning(sim: Any, monkeypatch: pytest.MonkeyPatch, number: int) -> None:
    """FAULT INJECTION: the provisioner fails every try of claim <number> with ERROR."""
    api = sim.emulator.api
    real = api.create

    def create(res: Any, ns: str, body: Any) -> Any:
        if res.kind == "PersistentVolumeClaim" and body["metadata"]["name"].endswith(f"-{number:04d}"):
            body["metadata"].setdefault("annotations", {})["podtax.io/sim-provision-error"] = ERROR
        return real(res, ns, body)

    monkeypatch.setattr(api, "create", create)


@pytest.mark.parametrize("events", ["listed", "forbidden"])
def test_a_claim_given_up_pending_quotes_its_provisioningfailed_event(kubesim_factory: Any, run_cp: Any,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     events: str) -> None:
    faults = {"faults": {"forbid": ["list events"]}} if events == "forbidden" else {}
    sim = kubesim_factory({**cluster(), **faults}, kubelet="none")
    fail_provisioning(sim, monkeypatch, 3)
    tl = run_cp(spec("volume-churn", count=12, concurrency=4, timeout=30), kube=sim)
    failed = {n[-4:]: r.error or "" for n, r in tl.objects.items() if r.error}
    assert list(failed) == ["0003"], failed
    error = failed["0003"]
    assert error.startswith("not Bound after ") and "given up, the run went on; " in error, error
    if events == "listed":
        quoted = f"its newest event: ProvisioningFailed (%s times): {ERROR}"
        said = error.split("given up, the run went on; ", 1)[1]
        times = said.removeprefix("its newest event: ProvisioningFailed (").split(" ", 1)[0]
        assert times.isdigit() and int(times) >= 2, said  # tried again (after 1, 2, 4 s) while the run waited
        assert said == quoted % times, said  # whole: within the quote's bound (SAID_CHARS)
    else:
        assert re.search(r"; its events not readable \(403 Forbidden\): grant the runner list on events in "
                         r"namespace [a-z0-9-]+$", error), error
    values = parser.parse(tl.jsonl(), "volume-churn", {"count": 12}).values()
    assert values["objects_ok"] == 11 and values["errors"] == 1
    assert leftovers(sim.kubeconfig) == []
