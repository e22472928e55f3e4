"""An API that cannot be reached fails the run at once, naming its address; only a call that was sent and got no
answer gives its object up as a lower bound. urllib3's NewConnectionError (connection refused) is a
ConnectTimeoutError, so with kubesim stopped mid-run each refused create or delete was given up as "no answer in
time" (then the run ended as "the API refused 11 of 100 requests"), a watch refused until the run's timeout ended it
as "N of N objects stuck in the bind wait", and a wrong port ended in a bare MaxRetryError; Nomad's refused calls
failed their volumes one by one (8 of 8 failed, and the run was reported). Against the real kubesim and nomadsim
processes killed mid-run, through the real kubernetes client and httpx, and a campaign through the real services."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes import config as kconfig
from podtax import natsserver
from podtax_runner.controlplane.apierrors import timed_out, unreachable
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import cluster, spec, start_and_submit
from tests.paused import pause

NEVER_S = 600.0  # a latency (provisioning, pod start) no run here waits out: claims Pending, pods not started
TIMEOUT_S = 20.0  # stall window 2 s: a watch or poll refused that long ends the run
NS = "podtax-runs"


def kill_when(proc: Any, count: Callable[[], int], at: int) -> threading.Thread:
    """Kill the emulator's process once `count()` (objects the run created) reaches `at`: the API dies mid-run."""
    def watch() -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while count() < at and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.kill()
        proc.wait(timeout=10)

    thread = threading.Thread(target=watch, name="kill-the-api", daemon=True)
    thread.start()
    return thread


def core(kubeconfig: Path) -> client.CoreV1Api:
    cfg = client.Configuration()
    kconfig.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


def counter(api: client.CoreV1Api, lister: str) -> Callable[[], int]:
    """How many objects `lister` lists in the runs' namespace (0 before it exists)."""
    def count() -> int:
        try:
            return len(getattr(api, lister)(NS, _request_timeout=5).items)
        except Exception:  # noqa: BLE001 - the namespace is not there yet, or the API just died
            return 0
    return count


@pytest.mark.parametrize(("test", "params", "lister"), [
    ("volume-churn", {"count": 300, "concurrency": 1},  # killed among the creates: refused creates
     "list_namespaced_persistent_volume_claim"),
    ("volume-churn", {"count": 5}, "list_namespaced_persistent_volume_claim"),  # in the bind wait: refused watches
    ("volume-churn", {"count": 5, "observe": "poll", "poll_interval_s": 0.2},  # and refused polls
     "list_namespaced_persistent_volume_claim"),
    ("pod-startup", {"count": 5}, "list_namespaced_pod"),  # pods not started: in the start wait
])
def test_kubesim_killed_mid_run_fails_the_run_naming_its_address(kubesim_process: Any, run_cp: Any, test: str,
                                                                  params: dict[str, Any], lister: str) -> None:
    sim = kubesim_process({**cluster(provision=NEVER_S), "simulation": {"startDelaySeconds": NEVER_S}},
                          kubelet="simulated")
    api = core(sim.kubeconfig)
    address = api.api_client.configuration.host
    killer = kill_when(sim.proc, counter(api, lister), 5)
    with pytest.raises(Aborted) as info:
        run_cp(spec(test, timeout=TIMEOUT_S, **params), kube=sim)
    killer.join()
    assert info.value.reason == "kubernetes-unreachable", info.value.detail
    assert info.value.detail.startswith(f"cannot reach the Kubernetes API at {address} ("), info.value.detail
    assert "Connection refused" in info.value.detail and "PODTAX_RUNNER_KUBECONFIG" in info.value.detail


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


def test_a_kubernetes_api_that_never_answers_fails_the_run_naming_its_address(
        kubesim_process: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Connected but never answered (the process stopped): the run's own first calls time out, before any object
    (a bare MaxRetryError of a read timeout before)."""
    import signal

    from podtax_runner.controlplane import kubeapi

    monkeypatch.setattr(kubeapi, "TIMEOUT", (1.0, 1.0))  # 60 s a read in a run; the same rule, shorter
    sim = kubesim_process(cluster())
    address = core(sim.kubeconfig).api_client.configuration.host
    pause(sim.proc.pid)  # every thread stopped: it can answer nothing more (kill() only queues the signal)
    try:
        with pytest.raises(Aborted) as info:
            run_cp(spec("volume-churn", count=5, timeout=TIMEOUT_S), kube=sim)
    finally:
        sim.proc.send_signal(signal.SIGCONT)
    assert info.value.reason == "kubernetes-no-answer", info.value.detail
    assert info.value.detail.startswith(f"the Kubernetes API at {address} did not answer in time (ReadTimeoutError: ")


def test_nomadsim_killed_mid_run_fails_the_run_naming_its_address(nomadsim_process: Any, run_cp: Any) -> None:
    sim = nomadsim_process({"plugins": [{"id": "hostpath", "createLatency": 0.05, "deleteLatency": 0.01}]})
    killer = kill_when(sim.proc, lambda: len(sim.volumes()), 5)
    with pytest.raises(Aborted) as info:
        run_cp(spec("volume-churn", env="nomad", count=40, concurrency=2, timeout=TIMEOUT_S, plugin_id="hostpath"),
               nomad=sim)
    killer.join()
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


@pytest.mark.parametrize(("verb", "raises", "sent"), [
    ("list", Aborted, 3),  # a read is sent again: the next attempts are refused, so the API is unreachable
    ("get", Aborted, 3),
    ("create", Aborted, 1),  # a create or delete is not sent again; the API now refuses a connection: unreachable
    ("delete", Aborted, 1),
])
def test_a_read_whose_connection_broke_as_the_api_died_is_sent_again(verb: str, raises: type, sent: int) -> None:
    """kubesim killed while a watch's first list was in flight: the list's connection broke (ProtocolError, not a
    refusal), it was not retried and the run failed as executor-error with a bare MaxRetryError (a mid-stop CI, and
    2 of 3 runs of the campaign test below at load 2); now a read is sent again and the refusals that follow make it
    kubernetes-unreachable. The real Kube.call with a request function that fails as urllib3 does."""
    from podtax_runner.controlplane.kubeapi import Kube
    failures = [_max_retries(urllib3.exceptions.ProtocolError("Connection aborted.")),
                *[_max_retries(urllib3.exceptions.NewConnectionError(None, "refused")) for _ in range(2)]]  # type: ignore

    def request(**_kwargs: Any) -> None:
        raise failures.pop(0)

    kube = Kube(client.ApiClient(client.Configuration(host="https://127.0.0.1:1")))
    with pytest.raises(raises) as info:
        kube.call(verb, request)
    assert 3 - len(failures) == sent
    if raises is Aborted:
        assert info.value.reason == "kubernetes-unreachable", info.value.detail


def test_a_write_whose_connection_broke_is_not_said_unreachable_while_the_api_answers() -> None:
    """A create whose connection broke while the API still takes connections keeps its own error (its object fails):
    only a refusal now makes it kubernetes-unreachable (the campaign test below failed 1 in 3 as executor-error:
    the next run's namespace create met the dead API's kept-alive connection)."""
    import socket

    from podtax_runner.controlplane.kubeapi import Kube
    server = socket.create_server(("127.0.0.1", 0))  # listens: a connection to it is not refused
    port = server.getsockname()[1]

    def request(**_kwargs: Any) -> None:
        raise _max_retries(urllib3.exceptions.ProtocolError("Connection aborted."))

    kube = Kube(client.ApiClient(client.Configuration(host=f"https://127.0.0.1:{port}")))
    try:
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            kube.call("create", request)
    finally:
        server.close()


CAMPAIGN = {"name": "cp-dies", "nodes": ["node-1"], "environments": ["kubernetes"],
            "tests": [{"test": "volume-churn", "params": {"count": 5, "concurrency": 5}}],
            "repetitions": {"min": 3, "max": 3}, "timeout": 30, "seed": 3}


async def test_a_campaign_keeps_the_runs_measured_before_the_api_died(nats_url: str, tmp_path: Path,
                                                                       kubesim_process: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real runner, parser and analyzer (real nats-server, DuckDB): kubesim killed once the first run
    is stored; that run stays stored with its metrics, the runs after it are stored failed, kubernetes-unreachable,
    naming the address."""
    from tests.integration.harness import services, wait_for

    sim = kubesim_process(cluster(provision=1.0, delete=0.01), kubelet="simulated")  # a run takes over 1 s
    address = core(sim.kubeconfig).api_client.configuration.host
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    async with services(nats_url, tmp_path) as s:
        await start_and_submit(s, tmp_path, [CAMPAIGN], runner_kubeconfig=sim.kubeconfig)
        runs = "SELECT run_id, status, failure_reason, failure_detail FROM runs WHERE campaign = 'cp-dies'"
        await wait_for(lambda: any(r[1] == "ok" for r in s.query(runs)), 60, "the first run stored")
        sim.proc.kill()
        await wait_for(lambda: len(s.query(runs)) == 3, 60, "3 runs stored")
        rows = s.query(runs)
        ok = [r for r in rows if r[1] == "ok"]
        failed = [r for r in rows if r[1] != "ok"]
        assert ok and failed, rows
        assert {r[2] for r in failed} == {"kubernetes-unreachable"}, failed
        assert all(r[3].startswith(f"cannot reach the Kubernetes API at {address} (") for r in failed), failed
        metrics = "SELECT count(*) FROM metrics WHERE run_id = ? AND name = 'provisioned_p50_ms'"
        assert all(s.query(metrics, [r[0]])[0][0] == 1 for r in ok), ok  # measured before: kept


def test_a_nomad_address_that_answers_garbage_is_not_said_not_to_answer() -> None:
    """check_plugin said 'did not answer' for any httpx.HTTPError, a protocol error too (reviewer of this stop): a
    real socket at the address answers each request with a line that is not HTTP."""
    import socket
    import threading

    from podtax_runner.controlplane import nomad

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    threading.Thread(target=serve, daemon=True).start()
    n = nomad.Nomad(nomad.NomadConfig(address=f"http://127.0.0.1:{port}"))
    try:
        with pytest.raises(Aborted) as info:
            n.check_plugin("hostpath")
    finally:
        n.close()
        server.close()
    assert info.value.reason == "nomad-error", info.value.detail  # before: nomad-unreachable, "did not answer"
    assert "did not answer" not in info.value.detail and "RemoteProtocolError" in info.value.detail, info.value.detail
