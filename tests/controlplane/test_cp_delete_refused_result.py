"""A control-plane run whose deletes were refused after every object was created and bound is a result flagged
DELETE_REFUSED: its create and bind figures as any run's, its delete phases and whole-run figures absent.

Before, such a run (RBAC's 403 on delete; Nomad answering 500 to every delete) failed and kept its timeline marked
`aborted`, which the parser refused: 100 volumes' create and bind times lost to every comparison. Now the runner marks
the abort `deletes_refused` (the call refused was a delete) and, after the run's failure (same reason, detail and exit
status), publishes the timeline as its raw log; the parser makes it a result when every object was created and bound,
and refuses it as before otherwise (a half-created run is never a result). Through the real kubernetes client against
kubesim (fault forbid), the real Nomad client against nomadsim (failRequests), the real executor, nats-server, parser
(derive) and a real DuckDB analyzer read by the real CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from podtax import events, subjects
from podtax.derive import derive
from podtax.flags import LEGEND
from podtax.parsers import ParseFailure, parse_run
from podtax_analyzer.api import create_app
from podtax_analyzer.store import Store
from podtax_runner.controlplane.common import Aborted, object_name
from podtax_runner.controlplane.execute import measured_of

from tests.controlplane.conftest import cluster, leave_nomad_volume, reports, spec
from tests.controlplane.test_cp_leftovers import NS, claim
from tests.report.conftest import cli_output, json_cells, serve

FORBID_DELETE = {"faults": {"forbid": ["delete persistentvolumeclaims"]}}
NOMAD_DELETE_500 = {"faults": {"failRequests": [{"request": "DELETE /v1/volume/csi/:id/delete", "status": 500,
                                                 "times": 0}]}}
NOMAD_DELETE_403 = {"faults": {"failRequests": [{"request": "DELETE /v1/volume/csi/:id/delete", "status": 403,
                                                 "times": 0}]}}
K8S_DELETE = ("deleted", "pv_deleted")
WHOLE_RUN = ("objects_ok", "errors", "requests_per_object", "server_requests_per_object", "wall_s")


def _flag(flags: tuple[str, ...] | list[str]) -> str:
    found = [f for f in flags if f.startswith("DELETE_REFUSED: ")]
    assert len(found) == 1, flags
    return found[0]


def _aborted(run_cp: Any, run: events.RunSpec, **backend: Any) -> Aborted:
    with pytest.raises(Aborted) as err:
        run_cp(run, **backend)
    return err.value


def test_a_run_whose_deletes_rbac_refused_is_a_result_of_its_create_and_bind(kubesim_factory: Any,
                                                                             run_cp: Any) -> None:
    sim = kubesim_factory({**cluster(provision=0.01), **FORBID_DELETE}, kubelet="none")
    err = _aborted(run_cp, spec("volume-churn", count=20, concurrency=4, timeout=30), kube=sim)
    assert err.reason == "kubernetes-forbidden" and 'cannot delete resource "persistentvolumeclaims"' in err.detail
    tl = measured_of(err)
    assert tl is not None and tl.aborted is not None and tl.aborted["deletes_refused"] is True
    parsed = parse_run("volume-churn", tl.jsonl())  # refused before: kubernetes-forbidden
    values = parsed.values()
    flag = _flag(parsed.flags)
    assert flag.startswith("DELETE_REFUSED: deleted, pv_deleted; the run failed, kubernetes-forbidden: ")
    assert "its 20 objects were all created and bound" in flag
    bound = sorted(r.t["bound"] - r.t["request_sent"] for r in tl.objects.values())
    assert values["bound_max_ms"] == pytest.approx(bound[-1] * 1000) and values["bound_min_ms"] == pytest.approx(
        bound[0] * 1000)
    for phase in ("accepted", "provisioned", "bound"):
        assert {f"{phase}_p50_ms", f"{phase}_p99_ms", f"{phase}_makespan_s"} <= set(values), (phase, values)
    # no delete figure (not zero, not a lower bound), no whole-run figure that counts the refused deletes
    assert not [m for m in values if m.startswith(K8S_DELETE)], values
    assert not set(WHOLE_RUN) & set(values), values
    # the same timeline without the mark (a timeline kept before it, or any other abort) is refused as before
    lines = tl.jsonl().splitlines()
    header = json.loads(lines[0])
    del header["aborted"]["deletes_refused"]
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", "\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert refused.value.reason == "kubernetes-forbidden" and "not a result" in refused.value.detail


def test_a_nomad_run_whose_deletes_fail_is_a_result_of_its_creates(nomadsim_factory: Any, run_cp: Any) -> None:
    nomad = nomadsim_factory(NOMAD_DELETE_500)
    run = spec("volume-churn", env="nomad", count=20, concurrency=4, timeout=30, plugin_id="hostpath")
    err = _aborted(run_cp, run, nomad=nomad)
    assert err.reason == "api-errors" and "delete: " in err.detail, err.detail
    tl = measured_of(err)
    assert tl is not None
    parsed = parse_run("volume-churn", tl.jsonl())
    values = parsed.values()
    assert _flag(parsed.flags).startswith("DELETE_REFUSED: pv_deleted; the run failed, api-errors: Nomad refused ")
    assert {"provisioned_p50_ms", "provisioned_max_ms", "provisioned_makespan_s"} <= set(values), values
    assert not [m for m in values if m.startswith("pv_deleted")] and not set(WHOLE_RUN) & set(values), values
    assert not [f for f in parsed.flags if f.startswith(("ERRORS", "LOWER_BOUND"))], parsed.flags


def test_a_half_created_kubernetes_run_whose_deletes_were_refused_is_never_a_result(kubesim_factory: Any,
                                                                                    run_cp: Any) -> None:
    """One claim's name taken (409 on its create: never created), then RBAC refuses the deletes: the run is marked
    deletes_refused, but not every object was created, so the parser refuses it as before."""
    run = spec("volume-churn", campaign="cpc", count=10, concurrency=5, timeout=30)
    taken = object_name("vc", "cpc", run.run_id, 3)
    sim = kubesim_factory({**cluster(provision=0.01), **FORBID_DELETE}, kubelet="none")
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, namespace="")
    sim.create(claim(taken, {}), namespace=NS)
    err = _aborted(run_cp, run, kube=sim)
    assert err.reason == "kubernetes-forbidden", err.detail
    tl = measured_of(err)
    assert tl is not None and tl.aborted is not None and tl.aborted["deletes_refused"] is True
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", tl.jsonl())
    assert refused.value.reason == "kubernetes-forbidden", refused.value
    assert f"not every object was created and bound before them ({taken} failed before its delete (" \
        in refused.value.detail, refused.value.detail


def test_a_half_created_nomad_run_whose_deletes_failed_is_never_a_result(nomadsim_factory: Any,
                                                                         run_cp: Any) -> None:
    """One volume of the run's names exists already (left by an earlier run: failed, its create not sent), then
    Nomad answers 403 to the first delete (the token's policy): nomad-forbidden at the deletes, marked
    deletes_refused, not a result. (With 500 to every delete, the leftover counted among the 11 failures that end
    the run: not marked, test_cp_delete_refused_failed_before.py.)"""
    sim = nomadsim_factory(NOMAD_DELETE_403)
    run = spec("volume-churn", env="nomad", count=12, concurrency=1, timeout=30, plugin_id="hostpath")
    taken = leave_nomad_volume(sim, run, 3)
    err = _aborted(run_cp, run, nomad=sim)
    assert err.reason == "nomad-forbidden" and "the run's delete of " in err.detail, err.detail
    tl = measured_of(err)
    assert tl is not None and tl.aborted is not None and tl.aborted["deletes_refused"] is True
    with pytest.raises(ParseFailure) as refused:
        parse_run("volume-churn", tl.jsonl())
    assert refused.value.reason == "nomad-forbidden", refused.value
    assert f"({taken} failed before its delete (" in refused.value.detail, refused.value.detail


def test_the_runner_reports_the_failure_and_the_analyzer_stores_its_create_and_bind_figures(
        kubesim_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = kubesim_factory({**cluster(provision=0.01), **FORBID_DELETE}, kubelet="none")
    run = spec("volume-churn", campaign="dr", count=20, concurrency=4, timeout=30)
    (failed_on, failed), (log_on, log) = asyncio.run(reports(tmp_path, sim, run))
    assert failed_on.startswith(subjects.RUN_FAILED) and log_on.startswith(subjects.RUN_LOG), (failed_on, log_on)
    # the run is reported failed first, as before: same reason, its detail naming the kept file (still written)
    assert isinstance(failed, events.RunFailedV1) and failed.data.reason == "kubernetes-forbidden", failed
    kept = list((tmp_path / "spool" / "measured").iterdir())
    assert len(kept) == 1 and f"is kept in {kept[0]}" in failed.data.detail, failed.data.detail
    assert "a result flagged DELETE_REFUSED" in failed.data.detail
    assert isinstance(log, events.RawLogV1), log  # the same objects as the kept file (its header's wall_s is earlier)
    assert log.data.stdout.splitlines()[1:] == kept[0].read_text().splitlines()[1:]
    result = derive(log.data)  # the parser service's function
    assert isinstance(result, events.ResultV1), result
    store = Store(tmp_path / "podtax.duckdb")
    store.write_batch([failed])
    store.write_batch([log, result])  # a result supersedes the recorded failure
    status, flags = store.con.execute("SELECT status, flags FROM runs WHERE run_id = 'dr-volume-churn-kubernetes-0'"
                                      ).fetchone()
    names = {n for (n,) in store.con.execute("SELECT name FROM metrics WHERE run_id = 'dr-volume-churn-kubernetes-0'"
                                             ).fetchall()}
    phases = {p for (p,) in store.con.execute("SELECT DISTINCT phase FROM phases").fetchall()}
    with serve(create_app(store)) as url:
        cells = json_cells("report", "dr", "--api", url)
        monkeypatch.setenv("PODTAX_API_URL", url)  # `podtax results` has no --api
        table = cli_output("results", "--campaign", "dr")
        cli_output("report", "dr", "--html", str(tmp_path / "dr.html"), "--api", url)
    store.close()
    assert status == "ok" and _flag(flags).startswith("DELETE_REFUSED: deleted, pv_deleted; the run failed, "
                                                      "kubernetes-forbidden: ")
    assert {"bound_p50_ms", "provisioned_makespan_s"} <= names and not [n for n in names if n.startswith(K8S_DELETE)]
    assert not set(WHOLE_RUN) & names, names
    assert phases == {"accepted", "provisioned", "bound"}, phases  # no delete phase row of any object
    assert "DELETE_REFUSED" in cells["bound_p50_ms"]["flags"], cells["bound_p50_ms"]
    said = cells["bound_p50_ms"]["flag_details"]["DELETE_REFUSED"]
    assert "Deletes refused: 1 of 1 kubernetes run failed" in said and "RBAC's or Nomad's 403 on a delete" in said
    assert not [m for m in cells if m.startswith(K8S_DELETE)], sorted(cells)
    assert "DELETE_REFUSED" in table, table
    assert LEGEND["DELETE_REFUSED"][:60] in (tmp_path / "dr.html").read_text()
