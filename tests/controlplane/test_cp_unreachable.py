"""An API that cannot be reached fails the run at once, naming its address; only a call that was sent and got no
answer gives its object up as a lower bound. urllib3's NewConnectionError (connection refused) is a
ConnectTimeoutError, so with kubesim stopped mid-run each refused create or delete was given up as "no answer in
time" (then the run ended as "the API refused 11 of 100 requests"), a watch refused until the run's timeout ended it
as "N of N objects stuck in the bind wait", and a wrong port ended in a bare MaxRetryError; Nomad's refused calls
failed their volumes one by one (8 of 8 failed, and the run was reported). Against the real kubesim and nomadsim,
stopped mid-run, through the real kubernetes client and httpx."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from podtax import natsserver
from podtax_runner.controlplane.common import Aborted, timed_out, unreachable

from tests.controlplane.conftest import cluster, spec

NEVER_S = 600.0  # a provisioning latency no run here waits out: claims stay Pending
TIMEOUT_S = 20.0  # stall window 2 s: a watch or poll refused that long ends the run


def stop_when(sim: Any, count: Callable[[], int], at: int) -> threading.Thread:
    """Stop `sim` once `count()` (objects the run created) reaches `at`: the API dies mid-run."""
    def watch() -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while count() < at and time.monotonic() < deadline:
            time.sleep(0.01)
        sim.stop()

    thread = threading.Thread(target=watch, name="stop-the-api", daemon=True)
    thread.start()
    return thread


def claims(sim: Any) -> int:
    return len(sim.objects("persistentvolumeclaims", "podtax-runs"))


@pytest.mark.parametrize(("count", "observe"), [
    (300, "watch"),  # stopped among the creates: refused creates
    (5, "watch"),  # stopped in the bind wait: refused watches
    (5, "poll"),  # stopped in the bind wait: refused polls
])
def test_kubesim_stopped_mid_run_fails_the_run_naming_its_address(kubesim_factory: Any, run_cp: Any, count: int,
                                                                   observe: str) -> None:
    sim = kubesim_factory(cluster(provision=NEVER_S), kubelet="simulated")
    address = sim.api_client().configuration.host
    stopper = stop_when(sim, lambda: claims(sim), 5)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", count=count, concurrency=1, timeout=TIMEOUT_S, observe=observe,
                    poll_interval_s=0.2), kube=sim)
    stopper.join()
    assert info.value.reason == "kubernetes-unreachable", info.value.detail
    assert info.value.detail.startswith(f"cannot reach the Kubernetes API at {address} ("), info.value.detail
    assert "Connection refused" in info.value.detail and "PODTAX_RUNNER_KUBECONFIG" in info.value.detail


def test_kubesim_stopped_in_a_pod_startup_fails_the_run_naming_its_address(kubesim_factory: Any,
                                                                           run_cp: Any) -> None:
    sim = kubesim_factory(cluster(), kubelet="none")  # no kubelet: the pods stay Pending, the run waits on its watch
    address = sim.api_client().configuration.host
    stopper = stop_when(sim, lambda: len(sim.objects("pods", "podtax-runs")), 5)
    with pytest.raises(Aborted) as info:  # a bare MaxRetryError before
        run_cp(spec("pod-startup", count=5, concurrency=5, timeout=TIMEOUT_S), kube=sim)
    stopper.join()
    assert info.value.reason == "kubernetes-unreachable", info.value.detail
    assert info.value.detail.startswith(f"cannot reach the Kubernetes API at {address} ("), info.value.detail


def test_a_wrong_kubernetes_port_fails_the_run_naming_its_address(kubesim_factory: Any, run_cp: Any,
                                                                  tmp_path: Path) -> None:
    sim = kubesim_factory(cluster())
    address = sim.api_client().configuration.host
    wrong = address.rsplit(":", 1)[0] + f":{natsserver.free_port()}"
    kubeconfig = tmp_path / "wrong-port.yaml"
    kubeconfig.write_text(Path(sim.kubeconfig).read_text().replace(address, wrong))
    with pytest.raises(Aborted) as info:  # a bare MaxRetryError before
        run_cp(spec("volume-churn", count=5, timeout=TIMEOUT_S), kube=types.SimpleNamespace(kubeconfig=kubeconfig))
    assert info.value.reason == "kubernetes-unreachable", info.value.detail
    assert info.value.detail.startswith(f"cannot reach the Kubernetes API at {wrong} (ConnectionRefusedError: ")


def test_nomadsim_stopped_mid_run_fails_the_run_naming_its_address(nomadsim_factory: Any, run_cp: Any) -> None:
    sim = nomadsim_factory({"plugins": [{"id": "hostpath", "createLatency": 0.05, "deleteLatency": 0.01}]})
    stopper = stop_when(sim, lambda: len(sim.volumes()), 5)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=40, concurrency=2, timeout=TIMEOUT_S, plugin_id="hostpath"),
               nomad=sim)
    stopper.join()
    assert info.value.reason == "nomad-unreachable", info.value.detail  # "api-errors: Nomad refused 11 of 40" before
    assert info.value.detail.startswith(f"cannot reach Nomad at {sim.url} (ConnectError: "), info.value.detail
    assert "podtax volumes cleanup --backend nomad" in info.value.detail  # what it created stays, and how to remove it


def _max_retries(reason: Exception) -> urllib3.exceptions.MaxRetryError:
    return urllib3.exceptions.MaxRetryError(None, "/api", reason)  # type: ignore[arg-type]


@pytest.mark.parametrize(("exc", "is_timeout", "is_unreachable"), [
    (_max_retries(urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out")), True, False),  # type: ignore
    (_max_retries(urllib3.exceptions.NewConnectionError(None, "refused")), False, True),  # type: ignore[arg-type]
    (_max_retries(urllib3.exceptions.ConnectTimeoutError("connect timed out")), False, True),
    (urllib3.exceptions.NewConnectionError(None, "refused"), False, True),  # type: ignore[arg-type]
    (TimeoutError("timed out"), True, False),
    (ConnectionRefusedError(111, "refused"), False, True),
    (_max_retries(urllib3.exceptions.ProtocolError("connection aborted")), False, False),
])
def test_a_refused_connection_is_unreachable_not_timed_out(exc: Exception, is_timeout: bool,
                                                            is_unreachable: bool) -> None:
    assert (timed_out(exc), unreachable(exc)) == (is_timeout, is_unreachable)
