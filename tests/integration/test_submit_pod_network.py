"""Network tests on a local `podtax up --exec-kubelet` without --pod-network (audit hE, network): the
emulator's exec kubelet then runs pods in this host's network, each with a made-up address; the runner's
client Job dialled its server pod's 10.64.x address and hung until the run's timeout (120 s per run), its
retry failed with "Address already in use", sockperf with "Sequence Number received was higher then
expected", and `campaign submit` had said nothing. Now `podtax up` records how its pods are networked in
up.json and `campaign submit` refuses network tests with pod runs there, saying what to restart. A real
nats-server; the up.json as `podtax up` writes it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from podtax.cli import common
from podtax.cli.main import main as cli
from podtax.cli.up import pod_network_mode

from tests.integration.test_submit import know_node, stream_messages

CAMPAIGN = {"name": "net", "nodes": ["n1"], "environments": ["host", "kubernetes"],
            "tests": [{"test": "sysbench-cpu"}, {"test": "sockperf", "params": {"topology": "pod->host"}}]}


def test_up_records_how_its_pods_are_networked() -> None:
    kube = Path("kubeconfig.yaml")
    assert pod_network_mode(kube, exec_kubelet=True, pod_network=False) == "host"
    assert pod_network_mode(kube, exec_kubelet=True, pod_network=True) == "own"
    assert pod_network_mode(kube, exec_kubelet=False, pod_network=False) == "simulated"
    assert pod_network_mode(None, exec_kubelet=True, pod_network=False) is None  # the runner's own cluster


@pytest.mark.parametrize(("mode", "envs", "refused"), [("host", ["host", "kubernetes"], True),
                                                       ("own", ["host", "kubernetes"], False),
                                                       (None, ["host", "kubernetes"], False),
                                                       ("host", ["host"], False)])
async def test_submit_refuses_network_pod_runs_without_a_pod_network(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
        mode: str | None, envs: list[str], refused: bool) -> None:
    monkeypatch.delenv("PODTAX_NATS_URL", raising=False)
    monkeypatch.setattr(common, "DATA_DIR", tmp_path)
    (tmp_path / common.UP_FILE).write_text(json.dumps({"nats_url": nats_url, "pod_network": mode}))
    await know_node(nats_url, "n1", host_agent=True, kubernetes=True, labels={})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**CAMPAIGN, "environments": envs}))
    before = await stream_messages(nats_url)
    code = await asyncio.to_thread(cli, ["campaign", "submit", str(path), "--dry-run"])
    err = " ".join(capsys.readouterr().err.split())
    if refused:
        assert code == 2 and "nothing was submitted" in err, err
        assert ("tests.1: sockperf's pod runs need pods with a network of their own, and the local `podtax up` "
                "runs its pods in this host's network (started without --pod-network)") in err, err
        assert "restart it with `podtax up --exec-kubelet --pod-network` (as root)" in err, err
        assert "tests.0" not in err
    else:
        assert code == 0 and "pod network" not in err, err
    assert await stream_messages(nats_url) == before
