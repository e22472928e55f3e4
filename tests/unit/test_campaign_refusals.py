"""Campaign files that used to be accepted and then failed or hung later: refused when read, with the file,
line, field and what is allowed; cells that coincide only once `all` is resolved are planned once, with
a warning, and status counts exactly the runs planned."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from podtax import campaign
from podtax.cli.main import main
from podtax.cli.progress_rows import progress_rows
from podtax_runner import plan
from podtax_runner.state import CampaignState, RunState

QUICK = (Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml").read_text()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def edit(old: str, new: str) -> str:
    assert old in QUICK
    return QUICK.replace(old, new)


TWO_TESTS = edit("timeout: 120", "timeout: 120\n").replace(
    "    matrix: {threads: [1, all]}\n", "    matrix: {threads: [1, all]}\n  - test: sysbench-cpu\n"
    "    params: {max_prime: 20000, events: 2000, time: 30, threads: 1}\n")
FIO = "name: f\nnodes: [n]\ntests:\n  - test: fio\n    matrix: {bs: [4k, 64k, 4K]}\n"

REFUSED = [  # id, campaign text, the one error line (file:line: field: what is allowed)
    ("matrix value twice", edit("[1, all]", "[1, 1]"),
     "c.yaml:8: tests.0.matrix.threads: lists 1 twice (items 0 and 1): list each value once"),
    ("matrix values equal once validated", FIO,
     "c.yaml:5: tests.0.matrix.bs: lists '4k' and '4K', the same value (items 0 and 2): list each value once"),
    ("two tests, one cell", TWO_TESTS, "c.yaml:9: tests.1: sysbench-cpu with events=2000 max_prime=20000 threads=1 "
                                       "time=30 is already planned by tests.0"),
    ("threads in params and matrix", edit("time: 30}", "time: 30, threads: 2}"),
     "c.yaml:8: tests.0.matrix.threads: threads is also set in this test's params (threads: 2); the matrix would "
     "silently override it: keep threads in params or in the matrix, not both"),
    ("empty image", edit("pod:\n", "pod:\n  image: ''\n"), "c.yaml:11: pod.image: '' is not an image reference: "
                                                            "name the benchmark image, e.g. ghcr.io/podtax/bench"),
    ("cpu not a quantity", edit('requests: {cpu: "1"', 'requests: {cpu: "lots"'),
     "c.yaml:11: pod.requests.cpu: 'lots' is not a quantity: write cpu as cores (1, 1.5) or millicores (500m)"),
    ("negative cpu", edit('requests: {cpu: "1"', 'requests: {cpu: "-1"'), "pod.requests.cpu: '-1' is negative"),
    ("cpu below 1m", edit('limits: {cpu: "1"', 'limits: {cpu: "0.0001"'),
     "c.yaml:12: pod.limits.cpu: '0.0001' is finer than Kubernetes counts CPU (1m = 0.001 core)"),
    ("memory in fractions of a byte", edit("memory: 256Mi}\n  limits", "memory: '0.5'}\n  limits"),
     "c.yaml:11: pod.requests.memory: '0.5' is not a whole number of bytes: write bytes with an optional suffix"),
    ("unknown resource", edit('limits: {cpu: "1"', 'limits: {gpu: "1", cpu: "1"'),
     "c.yaml:12: pod.limits.gpu: 'gpu' is not a resource Kubernetes knows: use cpu, memory, ephemeral-storage, "
     "hugepages-<size> (hugepages-2Mi) or a device plugin's <domain>/<name> (nvidia.com/gpu)"),
    ("request above limit", edit('requests: {cpu: "1", memory: 256Mi}', 'requests: {cpu: "4", memory: 8Gi}'),
     "c.yaml:11: pod.requests.cpu: the request '4' must be at most the limit (pod.limits.cpu: '1')"),
    ("memory request above limit", edit("memory: 256Mi}\n  limits", "memory: 8Gi}\n  limits"),
     "pod.requests.memory: the request '8Gi' must be at most the limit (pod.limits.memory: '256Mi')"),
    ("device resource overcommitted", edit('requests: {cpu: "1"', 'requests: {nvidia.com/gpu: 1, cpu: "1"')
     .replace('limits: {cpu: "1"', 'limits: {nvidia.com/gpu: 2, cpu: "1"'),
     "pod.requests.nvidia.com/gpu: the request '1' must be equal to the limit"),
    ("namespace not a DNS label", edit("pod:\n", "pod:\n  namespace: 'Bad NS!'\n"),
     "c.yaml:11: pod.namespace: 'Bad NS!' is not a namespace name: lowercase letters, digits and '-'"),
    ("label selector", edit("nodes: [node-1]", "nodes: {selector: '!!!==='}"),
     "c.yaml:3: nodes.selector: '!!!===' is not a label selector requirement: write key=value, key!=value"),
    ("empty label selector", edit("nodes: [node-1]", "nodes: {selector: ''}"), "nodes.selector: '' is not a label"),
    ("timeout true", edit("timeout: 120", "timeout: true"),
     "c.yaml:13: timeout: true is a yes/no value, not a number (YAML reads true, false, yes, no, on and off as "
     "booleans): write a number"),
    ("repetitions yes", edit("{min: 6, max: 6}", "{min: yes, max: 6}"), "c.yaml:9: repetitions.min: true is a yes/no"),
    ("seed false", QUICK + "seed: false\n", "c.yaml:14: seed: false is a yes/no value, not a number"),
    ("threads true in the matrix", edit("[1, all]", "[true, all]"), "c.yaml:8: tests.0.matrix.threads: true is a "
                                                                    "yes/no value, not a number"),
    ("template number true in params", edit("max_prime: 20000", "max_prime: on"),
     "c.yaml:7: tests.0.params.max_prime: true is a yes/no value, not a number"),
    ("localhost as a network server (iperf3 may try ::1 while podtax.netpair binds 127.0.0.1)",
     "name: n\nnodes: [n1]\ntests:\n  - test: iperf3\n    params: {server: localhost}\n",
     "c.yaml:5: tests.0.params.server: 'localhost' is not 127.0.0.1 or ::1: podtax chooses"),
]


@pytest.mark.parametrize(("text", "line"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_with_file_line_field_and_what_is_allowed(text: str, line: str) -> None:
    with pytest.raises(campaign.CampaignError) as info:
        campaign.parse(text, "c.yaml")
    assert len(str(info.value).splitlines()) == 1, str(info.value)
    assert line in str(info.value), str(info.value)


ACCEPTED = [  # id, campaign text, check on the result
    ("quantities as YAML numbers", edit('requests: {cpu: "1"', "requests: {cpu: 0.5"),
     lambda c: c.pod.requests["cpu"] == "0.5"),
    ("millicores, a device resource, an extended selector",
     edit('requests: {cpu: "1"', 'requests: {cpu: 500m, nvidia.com/gpu: "1", hugepages-2Mi: 4Mi')
     .replace('limits: {cpu: "1"', 'limits: {cpu: "1", nvidia.com/gpu: 1, hugepages-2Mi: 4Mi')
     .replace("nodes: [node-1]", "nodes: {selector: 'kubernetes.io/arch in (amd64, arm64),!gpu,tier=bench'}"),
     lambda c: c.nodes.selector.startswith("kubernetes.io/arch")),
    ("a boolean parameter stays a boolean", "name: f\nnodes: [n]\ntests:\n  - test: fio\n    params: {direct: no}\n",
     lambda c: c.tests[0].params["direct"] is False),
    ("1 and all (the same only on a 1-thread node)", QUICK, lambda c: c.tests[0].matrix["threads"] == [1, "all"]),
]


@pytest.mark.parametrize(("text", "check"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_accepted(text: str, check: object) -> None:
    assert callable(check) and check(campaign.parse(text, "c.yaml"))


def test_submit_dry_run_refuses_with_exit_2_and_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")  # never reached: refused before NATS
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    path = tmp_path / "c.yaml"
    path.write_text(edit("[1, all]", "[1, 1]"))
    assert main(["campaign", "submit", "--dry-run", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {path}:8: tests.0.matrix.threads: lists 1 twice (items 0 and 1): list each value once; nothing was "
        "submitted"]


@pytest.mark.parametrize(("hw_threads", "cells", "warned"), [(1, 1, True), (2, 2, False)])
def test_cells_equal_once_all_is_resolved_are_planned_once(hw_threads: int, cells: int, warned: bool) -> None:
    c = campaign.parse(QUICK)  # threads: [1, all]
    state = CampaignState.new(c, {"node-1": hw_threads}, "local", 1, T0)
    assert len(state.runs) == cells * 6 * 2  # cells x repetitions x environments
    assert bool(state.header.warnings) == warned
    if warned:
        assert state.header.warnings == ["node-1: sysbench-cpu events=2000 max_prime=20000 threads=all time=30 is "
                                         "the same cell as events=2000 max_prime=20000 threads=1 time=30 there "
                                         "(1 hardware threads): planned once"]
    assert progress_rows(state.header_json())["node-1"]["total"] == len(state.runs)  # what status counts
    for rid in list(state.runs):
        state.dispatched(rid, T0)
        state.outcome(rid, True, T0)
    assert state.finished_at == T0 and state.counts()["planned"] == 0


def test_a_stored_campaign_with_a_value_twice_loads_and_finishes() -> None:
    """Accepted before the check existed: the runner still resumes it, and status waits on no phantom run."""
    spec = {"name": "dupm", "nodes": ["vm"], "environments": ["host", "kubernetes"],
            "tests": [{"test": "sysbench-cpu", "matrix": {"threads": [1, 1]}}], "repetitions": {"min": 2, "max": 2}}
    with pytest.raises(ValueError, match="lists 1 twice"):
        campaign.Campaign.model_validate(spec)
    stored = campaign.Campaign.model_validate(spec, context=campaign.STORED)
    runs = [RunState(run=r) for q in plan.expand(stored, {"vm": 2}, seed=1).values() for r in q]
    state = CampaignState.new(stored, {"vm": 2}, "local", 1, T0)
    again = CampaignState(state.header.model_copy(), runs + runs)  # the same run ids twice: counted once
    for s in (state, again):
        assert len(s.runs) == 4 and s.counts()["planned"] == 4
        assert s.cancel(T0) == 4 and s.done and s.finished_at == T0
