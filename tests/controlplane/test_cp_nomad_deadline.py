"""A Nomad that stops answering (audit i, finding 6: nomadsim SIGSTOPped 2 s into a run with a 15 s timeout
held it 6 minutes: 60 s a read, 3 attempts a call, then a cleanup as long). Every call now ends by the run's
deadline, the cleanup within its own wait, and the run's failure says what it could not delete and how to
remove it; once Nomad answers again, that command removes it."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import httpx
import pytest
from podtax.cli.main import main as cli
from podtax_runner.controlplane import nomad
from podtax_runner.controlplane.common import Aborted

from tests.controlplane.conftest import spec

TIMEOUT_S, CLEANUP_S = 4.0, 3.0


@pytest.fixture
def nomadsim_pid(nomadsim_process: Any) -> Any:
    """The simulated Nomad in its own process, which the test can SIGSTOP: (url, process)."""
    sim = nomadsim_process({"plugins": [{"id": "hostpath", "provider": "hostpath.csi.podtax.io",
                                         "createLatency": 0.05}]})
    return sim.url, sim.proc


def test_a_hung_nomad_ends_the_run_at_its_deadline(nomadsim_pid: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    url, proc = nomadsim_pid
    monkeypatch.setattr(nomad, "CLEANUP_WAIT_S", CLEANUP_S)  # 30 s in a run; shorter here, the same rule
    run = spec("volume-churn", env="nomad", campaign="hang", count=400, concurrency=5, timeout=TIMEOUT_S,
               plugin_id="hostpath")
    threading.Timer(1.0, proc.send_signal, [signal.SIGSTOP]).start()  # mid-creates: ~80 made, 5 in flight
    started = time.monotonic()
    with pytest.raises(Aborted) as info:
        run_cp(run, nomad=type("Sim", (), {"url": url, "token": None})())
    took = time.monotonic() - started
    assert took < TIMEOUT_S + CLEANUP_S + 2, took
    detail = info.value.detail
    assert info.value.reason == "timeout" and f"the run did not finish within {TIMEOUT_S:g} s" in detail, detail
    assert "could not delete" in detail and f"Nomad at {url} did not answer" in detail, detail
    assert f"in the cleanup's {CLEANUP_S:g} s: remove them with `podtax volumes cleanup --backend nomad --campaign " \
        "hang`" in detail, detail

    proc.send_signal(signal.SIGCONT)  # Nomad answers again: the command the failure names removes what stayed
    assert httpx.get(f"{url}/v1/volumes", params={"type": "csi"}).json()  # the run did leave volumes
    assert cli(["volumes", "cleanup", "--backend", "nomad", "--campaign", "hang", "--nomad-addr", url]) == 0
    assert "nomad: removed" in capfd.readouterr().out
    assert httpx.get(f"{url}/v1/volumes", params={"type": "csi"}).json() == []
