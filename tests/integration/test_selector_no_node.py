"""A node selector that matches no node (examples/campaigns/arm-nodes.yaml on an amd64 `podtax up`): refused at
submit with the known nodes, and refused by the runner with the reason, so `campaign status` ends instead of
saying "running" for 24 h. Real nats-server, the Kubernetes emulator, the real KubeExecutor and CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from podtax import config, events, subjects
from podtax.bus import Bus, Permanent
from podtax.cli.main import main as cli
from podtax_kubesim.testing import start as start_kubesim
from podtax_runner.kube import KubeExecutor
from podtax_runner.service import Runner


def spec(name: str, selector: str) -> dict:
    return {"name": name, "nodes": {"selector": selector}, "environments": ["kubernetes"],
            "tests": [{"test": "sysbench-cpu"}], "repetitions": {"min": 1, "max": 1}}


@pytest.fixture
async def runner(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A runner with the Kubernetes executor of an emulator whose nodes are vm and pi (arm64), node facts saved
    as `serve` saves them."""
    sim = start_kubesim({"nodes": [{"name": "vm"}, {"name": "pi", "arch": "arm64"}]}, kubelet="none",
                        workdir=tmp_path / "kubesim")
    bus = await Bus.connect(nats_url, "test/runner")
    await bus.ensure_streams()
    settings = config.load(config.RunnerSettings, nats_url=nats_url, runner_kubeconfig=sim.kubeconfig,
                           runner_kubernetes=True)
    executor = KubeExecutor.create(settings, bus)
    r = Runner(settings, bus, await bus.kv(subjects.RUNNER_BUCKET), executor)
    for doc in await asyncio.to_thread(executor.nodes):
        await r.merge_node(doc["node"], doc)
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    yield r
    await executor.close()
    await bus.close()
    sim.stop()


@pytest.mark.parametrize(("selector", "code", "message"), [
    ("kubernetes.io/arch=s390x", 2, "selector kubernetes.io/arch=s390x matches no node (known: pi, vm)"),
    ("kubernetes.io/arch in (riscv64, s390x),!gpu", 2, "matches no node (known: pi, vm)"),
    ("kubernetes.io/arch=arm64", 0, "is valid"),
    ("kubernetes.io/os=linux,kubernetes.io/arch!=arm64", 0, "is valid"),
])
async def test_submit_refuses_a_selector_that_matches_no_known_node(
        runner: Runner, tmp_path: Path, capsys: pytest.CaptureFixture, selector: str, code: int,
        message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec("sel", selector)))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path), "--dry-run"]) == code
    out = capsys.readouterr()
    assert message in out.out + out.err
    if code:
        assert "nothing was submitted" in out.err


async def test_runner_refuses_a_selector_matching_no_node_and_status_ends(
        runner: Runner, capsys: pytest.CaptureFixture) -> None:
    event = events.campaign_submitted(events.CampaignSubmitted(campaign="arm",
                                                               spec=spec("arm", "kubernetes.io/arch=s390x")))
    with pytest.raises(Permanent, match="selector kubernetes.io/arch=s390x matches no node"):
        await runner.on_campaign(event)
    assert "arm" not in runner.campaigns
    assert await asyncio.to_thread(cli, ["campaign", "status", "arm", "--follow", "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert "the runner refused campaign 'arm'" in err and "matches no node (known: pi, vm)" in err
