"""`podtax campaign submit`: bad files, unknown tests and unknown nodes give clear errors and
publish nothing; a good campaign is published once; traces travel in NATS headers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats
import pytest
import yaml
from podtax import subjects
from podtax.bus import Bus
from podtax.campaign import parse
from podtax.cli.campaign import build_warnings, version_number
from podtax.cli.main import main as cli

from tests.integration.harness import wait_for

GOOD = {"name": "sub", "nodes": ["n1"], "environments": ["host"], "tests": [{"test": "sysbench-cpu"}]}


async def stream_messages(url: str) -> int:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(subjects.STREAM)
        return info.state.messages
    finally:
        await nc.close()


async def know_node(url: str, node: str, **doc: object) -> None:
    bus = await Bus.connect(url, "test")
    await bus.ensure_streams()
    kv = await bus.kv(subjects.RUNNER_BUCKET)
    await kv.put(subjects.node_key(node), json.dumps({"node": node, "hw_threads": 2, **doc}).encode())
    await bus.close()


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**GOOD, "tests": [{"test": "nope"}]}, "unknown test 'nope'"),
        ({**GOOD, "nodes": ["ghost"]}, "unknown node 'ghost'"),
        ({**GOOD, "environments": ["host", "kubernetes"]}, "not a Kubernetes node known to the runner"),
        ({**GOOD, "repetitions": {"min": 0}}, "repetitions.min"),
    ],
)
async def test_bad_campaigns_publish_nothing(nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture, doc: dict, message: str) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    before = await stream_messages(nats_url)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "nothing was submitted" in err
    assert await stream_messages(nats_url) == before


@pytest.mark.parametrize("kube_nodes", [["n1"], ["n1", "n2"]])
async def test_across_nodes_needs_a_second_kubernetes_node(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
        kube_nodes: list[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    for node in kube_nodes:
        await know_node(nats_url, node, kubernetes=True, labels={})
    before = await stream_messages(nats_url)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "environments": ["kubernetes"], "tests": [
        {"test": "sysbench-cpu"}, {"test": "iperf3", "matrix": {"topology": ["pod->pod", "pod->pod-across-nodes"]}}]}))
    code = await asyncio.to_thread(cli, ["campaign", "submit", str(path)])
    err = capsys.readouterr().err
    if len(kube_nodes) == 1:
        assert code == 2 and "nothing was submitted" in err, err
        assert ("tests.1: iperf3 with topology pod->pod-across-nodes needs a second Kubernetes node for its server, "
                "and the runner knows 1 (n1)") in err
        assert await stream_messages(nats_url) == before
    else:
        assert code == 0, err
        assert await stream_messages(nats_url) == before + 1


async def test_malformed_yaml_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("name: x\nnodes: [a\ntests: []\n")
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 2
    assert f"{path}:3" in capsys.readouterr().err or "not valid YAML" in capsys.readouterr().err


async def test_dead_nats_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture) -> None:
    from podtax import natsserver

    monkeypatch.setenv("PODTAX_NATS_URL", f"nats://127.0.0.1:{natsserver.free_port()}")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) != 0
    assert "cannot reach NATS" in capsys.readouterr().err


async def test_good_campaign_is_published_once_with_a_traceparent(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    trace.set_tracer_provider(TracerProvider())
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    await know_node(nats_url, "n1", host_agent=True)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    nc = await nats.connect(nats_url)
    got: list = []

    async def collect(msg: object) -> None:
        got.append(msg)

    await nc.subscribe("podtax.campaign.>", cb=collect)
    with trace.get_tracer("test").start_as_current_span("submit"):
        assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 0
    # the server sent the message before its answer to this flush: read then, handed to collect in its own task
    await nc.flush()
    await wait_for(lambda: got, 10, "the campaign's message")  # (before: a 0.3 s sleep, a guess)
    assert len(got) == 1
    assert got[0].headers["Nats-Msg-Id"].startswith("campaign.sub.")  # one per submission (test_submit_unplanned)
    assert got[0].headers["Nats-Expected-Last-Subject-Sequence"] == "0"  # the name had none (test_submit_race)
    assert got[0].headers["traceparent"].startswith("00-")
    await nc.close()


def test_build_warning_compares_version_numbers_not_lines() -> None:
    c = parse(yaml.safe_dump({**GOOD, "environments": ["host", "kubernetes"], "tests": [{"test": "stress-ng-cpu"}]}))
    same = {"tool_versions": {"stress-ng": "stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.1.0)"}}
    other = {"tool_versions": {"stress-ng": "stress-ng, version 0.17.04 (gcc 13, x86_64 Linux 6.8.0)"}}
    known = {"n1": {"tool_versions": {"stress-ng": "stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.18)"}}}
    assert build_warnings(c, known, same) == []
    [warning] = build_warnings(c, known, other)
    assert "CONFOUNDED" in warning and "0.17.04" in warning
    assert "not known yet" in build_warnings(c, known, None)[0]
    assert version_number("sysbench 1.0.20 (using bundled LuaJIT)") == "1.0.20"


async def test_a_dry_run_warns_that_an_unreachable_analyzer_would_refuse_the_submit(
        nats_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """NATS up, the analyzer PODTAX_API_URL names down: submit refuses (exit 1), but a dry run publishes nothing,
    so it says in one warning line that submit would refuse, and why, and exits 0 (review r3: it exited 1)."""
    from podtax import natsserver

    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    monkeypatch.setenv("PODTAX_API_URL", f"http://127.0.0.1:{natsserver.free_port()}")  # nothing there
    monkeypatch.delenv("PODTAX_API_TOKEN", raising=False)
    await know_node(nats_url, "n1", host_agent=True)
    before = await stream_messages(nats_url)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path), "--dry-run"]) == 0
    out, err = capsys.readouterr()
    checked = [line for line in err.splitlines() if "could not check the analyzer at" in line]
    assert len(checked) == 1 and checked[0].startswith("warning: "), err
    assert "without --dry-run submit would refuse (exit 1)" in checked[0], err
    assert "runs would mix in its cells" in checked[0] and "--skip-analyzer-check" in checked[0], err
    assert "error" not in err and "campaign sub is valid" in out and "dry run: nothing submitted" in out, (out, err)
    assert await asyncio.to_thread(cli, ["campaign", "submit", str(path)]) == 1  # the submit itself refuses
    assert "error: could not check the analyzer at" in capsys.readouterr().err
    assert await stream_messages(nats_url) == before
