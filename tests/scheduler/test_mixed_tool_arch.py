"""Nodes whose scores come from tool executables built for different architectures are not ranked against each other.

Node a's pod runs used a 32-bit armhf sysbench (an armv7 image), node b's the arm64 one: the same version is other
code (tests/analysis/test_tool_arch_confounded.py), so b's higher events per second may be the executable's, not the
node's. Each score names its runs' tool architectures (NodeScore.tool_archs, from runs.tool_arch); the scheduler
ranks nothing for a pod whose candidates' scores name more than one: it places by resources alone and a Warning
Event (BenchmarkMixedArch) names the nodes of each. A score naming none (an older wrapper or agent) is compared with
any, as the report compares such runs. End to end: raw logs through derive, a real DuckDB file, the analyzer's
node_scores, the real podtax_scores KV bucket on a real nats-server, the scheduler against the Kubernetes emulator;
and the plugin itself on published scores (which candidates count)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from podtax import benchwrap, events
from podtax.derive import derive
from podtax_analyzer.scores import node_scores
from podtax_analyzer.store import Store
from podtax_scheduler.model import PodInfo
from podtax_scheduler.scorestore import ScoreStore
from podtax_scheduler.scoring import MIXED_ARCH, BenchmarkScore, describe

from tests.scheduler.conftest import events_for, put_scores
from tests.scheduler.sched_objects import cluster, pod, score, with_uid
from tests.scheduler.sched_objects import node as node_obj
from tests.scheduler.test_e2e import bound_node, nodes

CAPTURE = Path(__file__).resolve().parents[1] / "corpus" / "sysbench" / "sbc-orange-pi-zero2" / "sysbench-cpu-1-thread"
ARM64 = {"machine": "aarch64", "tool_arch": "aarch64"}
ARMV7 = {"machine": "aarch64", "tool_arch": "arm"}
OLD: dict[str, str] = {}  # an older wrapper: no fields


def _results(node: str, fields: dict[str, str], eps: float, first: int, start: datetime) -> list[events.ResultV1]:
    """8 pod runs of sysbench-cpu on `node` through derive (the parser), events per second eps + i (the capture's
    total events to match)."""
    stdout = CAPTURE.read_text()
    out = []
    for i in range(8):
        run = events.RunSpec(run_id=f"r{first + i}", campaign="c", node=node, env="kubernetes", test="sysbench-cpu",
                             params={"threads": 1, "max_prime": 10000}, timeout_s=60)
        before = benchwrap.render("before", {"tool_version": "sysbench 1.0.18 (using system LuaJIT 2.1.0-beta3)",
                                             "kernel": "6.1.0", "hw_threads": "4", **fields})
        at = start + timedelta(minutes=first + i)
        said = stdout.replace("705.24", f"{eps + i:.2f}").replace(" 7057", f" {round((eps + i) * 10.0008)}")
        result = derive(events.RawLog(run=run, stdout=said, exit_code=0,
                                      stderr=f"{before}\n{benchwrap.render('after', {})}\n", started_at=at,
                                      ended_at=at + timedelta(seconds=10)))
        assert isinstance(result, events.ResultV1), result
        out.append(result)
    return out


def _scores(tmp_path: Path, a: dict[str, str], b: dict[str, str]) -> list[events.NodeScore]:
    """The analyzer's node scores of a (~700 events/s, tool `a`) and b (~1000 events/s, 43% more, tool `b`)."""
    start = datetime.now(UTC) - timedelta(hours=2)
    store = Store(tmp_path / "podtax.duckdb")
    try:
        store.write_batch(_results("a", a, 700, 0, start) + _results("b", b, 1000, 8, start))
        return node_scores(store.cursor(), env="kubernetes")
    finally:
        store.close()


@pytest.mark.parametrize(("a", "b", "mixed"), [(ARMV7, ARM64, True), (ARM64, ARM64, False), (OLD, ARM64, False)],
                         ids=["armhf-a-arm64-b", "arm64-both", "older-wrapper-a"])
def test_nodes_scored_with_tools_of_other_architectures_are_not_ranked(
        tmp_path: Path, a: dict[str, str], b: dict[str, str], mixed: bool, sim_factory: Any, scheduler_factory: Any,
        nats_url: str) -> None:
    """b is half full, so resources alone (LeastAllocated) pick a; b's 43% higher score picks b when its tool is
    a's (or a's runs name none). With a's armhf tool beside b's arm64 one, the pod goes by resources to a, and a
    Warning says why."""
    scores = _scores(tmp_path, a, b)
    eps = {s.node: s for s in scores if s.metric == "events_per_second"}
    assert eps["a"].flags == eps["b"].flags == []  # each node's own runs are of one architecture
    assert (eps["a"].tool_archs, eps["b"].tool_archs) == ([a["tool_arch"]] if a else [], ["aarch64"])
    sim = sim_factory(nodes({"name": "a", "arch": "arm64"}, {"name": "b", "arch": "arm64"}))  # two 64-bit Pis
    sim.create(pod("filler", cpu="2", node_name="b", scheduler="default-scheduler", test=None))
    put_scores(nats_url, scores)
    scheduler_factory(sim.kubeconfig)
    sim.create(pod("p", cpu="100m"))
    assert bound_node(sim, "p") == ("a" if mixed else "b")
    want = {"Scheduled", MIXED_ARCH} if mixed else {"Scheduled"}
    ev = sim.wait_for(lambda: (lambda e: e if {x["reason"] for x in e} >= want else None)(events_for(sim, "p")))
    scheduled = next(e["message"] for e in ev if e["reason"] == "Scheduled")
    warnings = [e for e in ev if e["type"] == "Warning"]
    if not mixed:
        assert "(median per run, 2 node(s) with evidence)" in scheduled and warnings == [], (scheduled, warnings)
        return
    said = ("the candidate nodes' benchmark scores come from tool executables built for different architectures "
            "on nodes of one architecture (arm64 nodes: aarch64 on b; arm on a), so their differences may be the "
            "code's, not the nodes'; placed by resources alone")
    assert [(w["reason"], w["message"]) for w in warnings] == [(MIXED_ARCH, said)]
    assert "no usable evidence of sysbench-cpu events_per_second" in scheduled and said in scheduled, scheduled


@pytest.mark.parametrize(("archs", "feasible", "want"), [
    ({"a": ("arm",), "b": ("aarch64",), "c": ("aarch64",)}, "abc", None),
    ({"a": ("arm",), "b": ("aarch64",), "c": ("aarch64",)}, "bc", {"b": 100.0, "c": 0.0}),  # a is not a candidate
    ({"a": (), "b": ("aarch64",), "c": ("aarch64",)}, "abc", {"a": 0.0, "b": 100.0, "c": 0.0}),  # a names none
    ({"a": ("arm",), "b": ("aarch64",), "c": ()}, "bc", {"b": 100.0, "c": 0.0}),
    ({"a": ("aarch64", "arm"), "b": ("aarch64",), "c": ("aarch64",)}, "abc", None),  # a's runs mixed: CONFOUNDED
], ids=["mixed", "mixed-node-not-a-candidate", "older-wrapper", "one-named-one-not", "a-confounded-not-ignored"])
def test_the_benchmark_score_compares_candidates_of_one_tool_architecture(
        archs: dict[str, tuple[str, ...]], feasible: str, want: dict[str, float] | None) -> None:
    """The plugin on published scores (b twice as fast as a and c): scores are judged among the pod's candidates
    (a node selector leaves out the others); a score naming no architecture is compared with any. The last case: a
    profile that does not ignore CONFOUNDED scores a's mixed runs as its own architecture, 'aarch64+arm'."""
    store = ScoreStore("local", "kubernetes")
    for node, speed in (("a", 50.0), ("b", 100.0), ("c", 50.0)):
        store.put_score(score(node, speed, 20, ci=(speed * 0.99, speed * 1.01)).model_copy(
            update={"tool_archs": list(archs[node])}))
    state = cluster({n: {"pick": "yes" if n in feasible else "no"} for n in "abc"}, [])
    p = PodInfo.from_dict(with_uid(pod("p", node_selector={"pick": "yes"})))
    idx = state.feasible(p)
    plugin = BenchmarkScore(store, 3600.0, ignore_flags=())
    cycle: dict[str, Any] = {}
    out = plugin.score(p, state, idx, cycle)
    bench = cycle["benchmark"]
    if want is None:
        assert bench["warning_reason"] == MIXED_ARCH and bench["covered"] == 0, bench
        assert np.all(out == plugin.missing_score) and "evidence" not in cycle
        assert "built for different architectures" in describe(bench)
        return
    assert {str(state.names[i]): float(v) for i, v in zip(idx, out, strict=True)} == want
    assert "warning" not in bench, bench


def test_a_group_of_one_tool_architecture_is_chosen_over_a_mixed_one() -> None:
    """Two parameter sets of the test and a pod naming none: threads=1 has more runs (the tie rule's) but its scores
    name two architectures, so it ranks nothing for the pod: threads=2, one architecture, is chosen and ranks."""
    store = ScoreStore("local", "kubernetes")
    for node, speed, arch in (("a", 50.0, "arm"), ("b", 100.0, "aarch64")):
        for params, n, archs in (("threads=1", 40, [arch]), ("threads=2", 20, ["aarch64"])):
            store.put_score(score(node, speed, n, params_key=params, ci=(speed * 0.99, speed * 1.01)).model_copy(
                update={"tool_archs": archs}))
    state = cluster({n: {"kubernetes.io/arch": "arm64"} for n in "ab"}, [])  # Pis (an amd64 label: EMULATED)
    p = PodInfo.from_dict(with_uid(pod("p")))
    idx = state.feasible(p)
    cycle: dict[str, Any] = {}
    out = BenchmarkScore(store, 3600.0).score(p, state, idx, cycle)
    assert cycle["benchmark"]["params_key"] == "threads=2" and "warning" not in cycle["benchmark"], cycle
    assert {str(state.names[i]): float(v) for i, v in zip(idx, out, strict=True)} == {"a": 0.0, "b": 100.0}


def test_a_score_with_a_field_this_scheduler_does_not_know_is_read() -> None:
    """A newer analyzer may add an optional field to NodeScore (as tool_archs was added): the scheduler's KV watch
    reads the score and ignores the field, as events.decode does. It refused it (extra fields forbidden: 'ignoring
    invalid score'), so a scheduler older than its analyzer ignored every score."""
    store = ScoreStore("local", "kubernetes")
    body = score("a", 100.0, 8).model_dump(mode="json")
    assert store.put("local.kubernetes.a", json.dumps({**body, "tool_archs": ["arm"], "added_later": [1]}))
    (read,) = store.snapshot(("sysbench-cpu", "events_per_second", "threads=1"))[1].values()
    assert (read.node, read.tool_archs) == ("a", ("arm",))


@pytest.mark.parametrize(("labels", "a_arch", "want"), [
    ({"a": "arm64", "b": "arm64"}, "arm", None),  # an armhf build beside the arm64 one on 64-bit Pis: not ranked
    ({"a": "arm", "b": "arm64"}, "arm", {"a": 0.0, "b": 100.0}),  # a 32-bit Pi's native armhf build: ranked
    ({}, "arm", None),  # nodes without kubernetes.io/arch are taken as one kind
    ({"b": "arm64"}, "arm", None),  # a, unlabelled, may be arm64 too: not ranked against b (was {"a": 0.0, "b": 100.0})
    ({"a": "arm"}, "arm", None),  # b, unlabelled, may be arm too
    # an x86 server's x86_64 build beside an unlabelled Pi's aarch64 one: builds of two families never share a machine
    # (podtax.archfamily), so ranked; they were not (BenchmarkMixedArch 'amd64 nodes: aarch64 on b; x86_64 on a', r11)
    ({"a": "amd64"}, "x86_64", {"a": 0.0, "b": 100.0}),
    ({}, "x86_64", {"a": 0.0, "b": 100.0}),
], ids=["one-label", "two-labels", "unlabelled", "a-unlabelled", "b-unlabelled", "x86-and-unlabelled-pi",
        "x86-and-pi-unlabelled"])
def test_tool_architectures_mix_only_on_nodes_of_one_label(labels: dict[str, str], a_arch: str,
                                                           want: dict[str, float] | None) -> None:
    """a's score from the `a_arch` build, b's from the arm64 one (twice as fast): judged per kubernetes.io/arch; a
    node without the label is judged with the nodes of every label, among builds of one family."""
    store = ScoreStore("local", "kubernetes")
    for node, speed, arch in (("a", 50.0, a_arch), ("b", 100.0, "aarch64")):
        store.put_score(score(node, speed, 20, ci=(speed * 0.99, speed * 1.01)).model_copy(
            update={"tool_archs": [arch]}))
    state = cluster({}, [])
    for n in "ab":
        obj = node_obj(n, arch=labels.get(n, "amd64"))
        if n not in labels:
            del obj["metadata"]["labels"]["kubernetes.io/arch"]
        state.upsert_node(obj)
    p = PodInfo.from_dict(with_uid(pod("p")))
    idx = state.feasible(p)
    cycle: dict[str, Any] = {}
    out = BenchmarkScore(store, 3600.0).score(p, state, idx, cycle)
    if want is None:
        kind = next(iter(labels.values()), "unlabelled")
        assert cycle["benchmark"]["warning_reason"] == MIXED_ARCH, cycle
        assert f"({kind} nodes: aarch64 on b; arm on a)" in cycle["benchmark"]["warning"], cycle
        return
    assert {str(state.names[i]): float(v) for i, v in zip(idx, out, strict=True)} == want
    assert "warning" not in cycle["benchmark"], cycle


def test_a_node_relabelled_is_judged_by_its_new_label() -> None:
    """The labels are read again when a node's labels change (the group's scores unchanged, its columns cached)."""
    store = ScoreStore("local", "kubernetes")
    for n, speed, arch in (("a", 50.0, "arm"), ("b", 100.0, "aarch64")):
        store.put_score(score(n, speed, 20, ci=(speed * 0.99, speed * 1.01)).model_copy(update={"tool_archs": [arch]}))
    state = cluster({}, [])
    for n in "ab":
        state.upsert_node(node_obj(n, arch="arm64"))
    plugin = BenchmarkScore(store, 3600.0)
    p = PodInfo.from_dict(with_uid(pod("p")))
    cycle: dict[str, Any] = {}
    plugin.score(p, state, state.feasible(p), cycle)
    assert cycle["benchmark"]["warning_reason"] == MIXED_ARCH
    state.upsert_node(node_obj("a", arch="arm"))  # reinstalled with a 32-bit OS
    cycle = {}
    plugin.score(p, state, state.feasible(p), cycle)
    assert "warning" not in cycle["benchmark"] and cycle["benchmark"]["covered"] == 2, cycle


def test_a_node_of_another_tool_build_is_not_named_better_measured() -> None:
    """c (not a candidate: the pod selects a and b) is scored 3x faster by the armhf build on the same arm64 label as
    a and b's arm64 build: it is not better measured, only otherwise built, so the Event does not name it; d, as fast
    by the arm64 build, is named."""
    store = ScoreStore("local", "kubernetes")
    for n, speed, arch in (("a", 50.0, "aarch64"), ("b", 100.0, "aarch64"), ("c", 300.0, "arm"),
                           ("d", 300.0, "aarch64")):
        store.put_score(score(n, speed, 20, ci=(speed * 0.99, speed * 1.01)).model_copy(update={"tool_archs": [arch]}))
    state = cluster({n: {"pick": "yes" if n in "ab" else "no", "kubernetes.io/arch": "arm64"} for n in "abcd"}, [])
    p = PodInfo.from_dict(with_uid(pod("p", node_selector={"pick": "yes"})))
    cycle: dict[str, Any] = {}
    BenchmarkScore(store, 3600.0).score(p, state, state.feasible(p), cycle)
    assert list(cycle["benchmark"]["passed_over"]) == ["d"], cycle
    assert "warning" not in cycle["benchmark"], cycle


@pytest.mark.parametrize(("label", "emulated"), [("arm64", True), ("arm", True), ("amd64", False), (None, False)],
                         ids=["arm64", "arm-kubelet", "amd64", "unlabelled"])
def test_a_score_of_a_tool_its_nodes_label_runs_only_emulated_is_not_used(label: str | None, emulated: bool) -> None:
    """a's score comes from an x86_64 sysbench (an amd64 image; under qemu-user its runs' uname said x86_64 too, so
    the analyzer could not flag them), 3x b's native arm64 one. On an arm64 (or 32-bit arm kubelet's) node that build
    ran emulated: a's evidence is not used and the Event says EMULATED by its label, not by the analyzer (whose
    score has no flag, as `podtax scores` says); on an amd64 node, or an unlabelled one, it is
    native or may be: ranked. The same plugin reads a's label again when it changes (its columns cached)."""
    store = ScoreStore("local", "kubernetes")
    for n, speed, arch in (("a", 300.0, "x86_64"), ("b", 100.0, "aarch64")):
        store.put_score(score(n, speed, 20, ci=(speed * 0.99, speed * 1.01)).model_copy(update={"tool_archs": [arch]}))
    state = cluster({}, [])
    state.upsert_node(node_obj("b", arch="arm64"))
    plugin, p = BenchmarkScore(store, 3600.0), PodInfo.from_dict(with_uid(pod("p")))
    for a_label in ("amd64", label):  # first native, then relabelled
        obj = node_obj("a", arch=a_label or "amd64")
        if a_label is None:
            del obj["metadata"]["labels"]["kubernetes.io/arch"]
        state.upsert_node(obj)
        idx = state.feasible(p)
        cycle: dict[str, Any] = {}
        out = {str(state.names[i]): float(v) for i, v in zip(idx, plugin.score(p, state, idx, cycle), strict=True)}
        said = describe(cycle["benchmark"])
        if a_label == label and emulated:
            want = (f"taken as EMULATED from the node's kubernetes.io/arch label (its tool builds run there only "
                    f"through an emulator; the analyzer's score is not flagged): a (x86_64 on {label})")
            assert want in said and "flagged by the analyzer" not in said, said  # the score's flags are []
            assert cycle["benchmark"]["covered"] == 1 and out["a"] < out["b"], (cycle, out)
        else:
            assert "EMULATED" not in said and out == {"a": 100.0, "b": 0.0}, (said, out)


@pytest.mark.parametrize("cluster_file", [None, "mixed.yaml"], ids=["default-cluster", "mixed-yaml"])
def test_a_kubesim_node_labelled_arm64_is_not_taken_as_emulated(cluster_file: str | None) -> None:
    """kubesim's exec kubelet runs a pod's benchmarks on the host running kubesim, so a simulated node labelled
    arm64 (the default cluster's rpi-0, examples/clusters/mixed.yaml's rpi-1 and rpi-2) has a score from this host's
    x86_64 sysbench, run natively: kubesim marks its nodes podtax.io/simulated=true and the scheduler does not read
    their label as the runs' machine (`make demo` ranks rpi-0). The same node without the annotation (a real arm64
    node) is taken as EMULATED."""
    from podtax_kubesim.cluster import expand_nodes, load, node_object

    path = Path(__file__).resolve().parents[2] / "examples" / "clusters" / cluster_file if cluster_file else None
    specs = expand_nodes(load(path))
    objs = [node_object(spec, i) for i, spec in enumerate(specs)]
    for obj in objs:  # taints (mixed.yaml's control plane) are not what this is about
        obj["spec"].pop("taints", None)
    arm = [o["metadata"]["name"] for o in objs if o["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"]
    assert arm and all(o["metadata"]["annotations"]["podtax.io/simulated"] == "true" for o in objs)
    state, store = cluster({}, []), ScoreStore("local", "kubernetes")
    for i, obj in enumerate(objs):
        state.upsert_node(obj)
        speed = 100.0 + 10 * i
        store.put_score(score(obj["metadata"]["name"], speed, 20, ci=(speed * 0.99, speed * 1.01))
                        .model_copy(update={"tool_archs": ["x86_64"]}))
    plugin, p = BenchmarkScore(store, 3600.0), PodInfo.from_dict(with_uid(pod("p")))
    cycle: dict[str, Any] = {}
    plugin.score(p, state, state.feasible(p), cycle)
    said = describe(cycle["benchmark"])
    assert "EMULATED" not in said and cycle["benchmark"]["covered"] == len(objs), said
    for obj in objs:  # the same nodes, real: no annotation
        del obj["metadata"]["annotations"]["podtax.io/simulated"]
        state.upsert_node(obj)
    cycle = {}
    plugin.score(p, state, state.feasible(p), cycle)
    said = describe(cycle["benchmark"])
    assert all(f"{n} (x86_64 on arm64)" in said for n in arm), said
    assert cycle["benchmark"]["covered"] == len(objs) - len(arm), said
