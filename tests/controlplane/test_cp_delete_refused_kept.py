"""A run whose deletes the API refuses still fails, with the same reason and message, but keeps what it measured.

Before: an account that may create but not delete (RBAC's 403 on delete) ended the run `kubernetes-forbidden` at its
first delete, and the create and bind times of every claim it had already measured were thrown away with it (the
failure carried only its reason and message). Now the failure (Aborted) carries the timeline measured until then,
marked `aborted` in its header (no summary line) and, its deletes refused, `deletes_refused`: the parser makes a result
flagged DELETE_REFUSED of its create and bind figures only (test_cp_delete_refused_result.py), and the runner keeps it
(dispatch.keep_measured) and names where. Against kubesim's fault forbid (RBAC's 403) through the real kubernetes
client."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from podtax import subjects
from podtax_runner.controlplane import __main__ as cli
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.dispatch import keep_measured
from podtax_runner.controlplane.execute import measured_of

from tests.controlplane.conftest import cluster, reports, spec


def _aborted(kubesim_factory: Any, run_cp: Any) -> Aborted:
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["delete persistentvolumeclaims"]}}, kubelet="none")
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", count=20, concurrency=4, timeout=30), kube=sim)
    return err.value


def test_a_refused_delete_keeps_the_create_and_bind_times_it_measured(kubesim_factory: Any, run_cp: Any) -> None:
    err = _aborted(kubesim_factory, run_cp)
    assert err.reason == "kubernetes-forbidden", (err.reason, err.detail)  # the same failure as before
    assert 'cannot delete resource "persistentvolumeclaims"' in err.detail and "\n" not in err.detail
    tl = measured_of(err)
    assert tl is not None, "the failure does not carry the timeline it measured"
    bound = [r for r in tl.objects.values() if "bound" in r.t and "request_sent" in r.t]
    assert len(bound) == 20, len(bound)
    header = json.loads(tl.jsonl().splitlines()[0])  # in the header, no summary line: older parsers say truncated
    assert {k: header["aborted"][k] for k in ("reason", "detail", "deletes_refused")} == {
        "reason": "kubernetes-forbidden", "detail": err.detail, "deletes_refused": True}
    assert json.loads(tl.jsonl().splitlines()[-1])["kind"] == "object"


def test_the_runner_keeps_the_measured_timeline_in_a_file_named_in_the_failure(kubesim_factory: Any, run_cp: Any,
                                                                             tmp_path: Path) -> None:
    err = _aborted(kubesim_factory, run_cp)
    run = spec("volume-churn", count=20, concurrency=4, timeout=30)
    said = keep_measured(err, run, tmp_path)
    files = list((tmp_path / "measured").iterdir())
    assert len(files) == 1 and files[0].name in said, (said, files)
    assert "the 20 object(s) it timed" in said and "a result flagged DELETE_REFUSED" in said, said
    kept = files[0].read_text()
    assert kept.splitlines()[1:] == measured_of(err).jsonl().splitlines()[1:]  # the header's aborted has wall_s
    assert sum(1 for line in kept.splitlines() if '"bound"' in line) == 20


def test_the_command_prints_the_measured_timeline_and_still_exits_1(kubesim_factory: Any, monkeypatch: Any) -> None:
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["delete persistentvolumeclaims"]}}, kubelet="none")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["--test", "volume-churn", "--kubeconfig", str(sim.kubeconfig), "--timeout", "30",
                         "--param", "count=10", "--param", "concurrency=4"])
    assert code == 1
    assert "failed (kubernetes-forbidden)" in err.getvalue()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines and lines[0]["kind"] == "header" and lines[0]["aborted"]["reason"] == "kubernetes-forbidden"
    assert sum(1 for line in lines if line["kind"] == "object" and "bound" in line["t"]) == 10


def test_a_nomad_run_whose_deletes_fail_keeps_the_create_times_it_measured(nomadsim_factory: Any, run_cp: Any) -> None:
    """More than max(10, 10 %) deletes refused (500 at every attempt: a plugin that answers 'volume in use' likewise)
    ends the run api-errors as before; the create times of its 20 volumes are kept."""
    fails = [{"request": "DELETE /v1/volume/csi/:id/delete", "status": 500, "times": 0}]
    nomad = nomadsim_factory({"faults": {"failRequests": fails}})
    with pytest.raises(Aborted) as err:
        run_cp(spec("volume-churn", env="nomad", count=20, concurrency=4, timeout=30, plugin_id="hostpath"),
               nomad=nomad)
    assert err.value.reason == "api-errors", (err.value.reason, err.value.detail)
    tl = measured_of(err.value)
    assert tl is not None, "the failure does not carry the timeline it measured"
    assert sum(1 for r in tl.objects.values() if "api_accepted" in r.t) == 20  # Nomad: created
    assert tl.aborted is not None and tl.aborted["deletes_refused"] is True  # its deletes: a DELETE_REFUSED result


async def test_the_runner_reports_the_same_failure_naming_the_kept_timeline(kubesim_factory: Any,
                                                                            tmp_path: Path) -> None:
    """Through ControlPlaneExecutor, a real nats-server and kubesim: the run is reported failed first (run.failed,
    reason kubernetes-forbidden), its detail names the file in the runner's spool folder that holds its 20 claims'
    create and bind times; then its timeline goes as its raw log (a DELETE_REFUSED result:
    test_cp_delete_refused_result.py)."""
    sim = kubesim_factory({**cluster(), "faults": {"forbid": ["delete persistentvolumeclaims"]}}, kubelet="none")
    seen = await reports(tmp_path, sim, spec("volume-churn", count=20, concurrency=4, timeout=30))
    assert len(seen) == 2 and seen[0][0].startswith(subjects.RUN_FAILED), seen
    assert seen[1][0].startswith(subjects.RUN_LOG), seen
    failed = seen[0][1].data
    assert failed.reason == "kubernetes-forbidden", failed
    kept = list((tmp_path / "spool" / "measured").iterdir())
    assert len(kept) == 1 and f"is kept in {kept[0]}" in failed.detail, (failed.detail, kept)
    lines = [json.loads(line) for line in kept[0].read_text().splitlines()]
    assert sum(1 for line in lines if line["kind"] == "object" and "bound" in line["t"]) == 20
    assert lines[0]["aborted"]["reason"] == "kubernetes-forbidden"
