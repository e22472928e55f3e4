"""Kubernetes refusing a run's own set-up call (here the creation of its namespace, kubesim's fault failCreates)
ends the run as `kubernetes-error` in one line, through the real entry point (`python -m podtax_runner.controlplane`,
its stderr): the call, the server's status and words, how often it was sent, that nothing was created, and what to do.
Before, it said only "the Kubernetes API at ... refused the run's request (500 Internal Server Error: ...)": not
which call, nor whether it had been retried or anything made (and the namespace's create, a 500, was sent once while
every other call is sent 3 times)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from podtax_runner.controlplane import kubeapi

from tests.controlplane.conftest import NODE, cluster, ours


def run_cli(kubeconfig: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    return subprocess.run([sys.executable, "-m", "podtax_runner.controlplane", "--test", "volume-churn", "--node",
                           NODE, "--kubeconfig", str(kubeconfig), "--campaign", "refused", "--param", "count=5",
                           "--timeout", "60"], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(("status", "sent"), [(500, kubeapi.ATTEMPTS), (400, 1)])
def test_a_refused_setup_call_ends_the_run_in_one_line_saying_what_to_do(status: int, sent: int,
                                                                          kubesim_factory: Any) -> None:
    fails = [{"match": "namespaces/", "status": status, "times": 0}]
    sim = kubesim_factory({**cluster(), "faults": {"failCreates": fails}}, kubelet="none")
    done = run_cli(sim.kubeconfig)
    *logged, err = done.stderr.strip().splitlines()  # before it: the retries' warnings, one line each
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and all("retrying in" in line for line in logged), done.stderr
    assert err.startswith("volume-churn failed (kubernetes-error): the Kubernetes API at "), err
    assert "refused the creation of namespace podtax-runs (POST /api/v1/namespaces)" in err, err
    assert f"({status} " in err and "podtax kubesim fault failCreates" in err, err  # the server's status and words
    assert "nothing was created" in err, err
    if status == 500:
        assert f"sent {sent} times" in err and "kubectl get --raw='/readyz?verbose'" in err, err
    else:
        assert "not sent again: it would not help" in err and "PODTAX_RUNNER_KUBECONFIG" in err, err
    served = kubeapi.Kube(sim.api_client()).scrape() or {}
    assert served.get(f"POST namespaces {status}") == sent, served  # retried as every call, no more
    assert ours(sim, "persistentvolumeclaims") == []
