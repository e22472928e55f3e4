"""A pod-startup pod's line holds its node's name (its server field `node`), which Kubernetes allows up to 253
characters (a DNS subdomain: ip-10-0-12-34.ec2.internal, gke-cluster-default-pool-1234abcd-xyzw, or longer), while
the pods are pinned by the node's `kubernetes.io/hostname` label (a label value: at most 63). The runner's bound on a
run's log (dispatch.log_bytes) took 500 bytes an object's line, which a pod's line passed once its node's name was
longer than ~15 characters (~740 at 253): a count allowed at submission could write a log above max_payload and lose
its measurements once done. Here a run through real kubesim on a node named 253 characters, every pod's create sent
again and some refused within the allowance, keeps every object within the figure, and so the largest count allowed
at 1 MiB within 1 MiB."""

from __future__ import annotations

import json
from typing import Any

from podtax_runner.controlplane import dispatch
from podtax_runner.controlplane.common import allowance

from tests.controlplane.conftest import NODE, cluster, spec
from tests.controlplane.test_cp_log_size import encoded

COUNT = 20
LONG = ".".join(["n" * 63, "o" * 63, "d" * 63, "e" * 61])  # 253 characters, the longest node name
MIB = 1_048_576


def escaped(value: Any) -> int:
    """What `value` takes in the raw-log event: its JSON inside the event's JSON, its quotes escaped."""
    return len(json.dumps(json.dumps(value, separators=(",", ":")))) - 2


def test_the_largest_count_allowed_fits_with_the_longest_node_name(kubesim_factory: Any, run_cp: Any) -> None:
    sim_cluster = cluster()
    sim_cluster["nodes"] = [{"name": LONG, "labels": {"kubernetes.io/hostname": NODE},
                             "capacity": {"cpu": "4", "memory": "8Gi"}}]
    pods = [{"match": f"pods/-{i:04d}", "status": 500, "times": 1} for i in range(1, COUNT + 1)  # each sent again
            if i % 10 != 7]  # but -0007 and -0017: "pods/7" (times 0) answers them all (kubesim refuses such entries)
    faults = {"failCreates": [{"match": "pods/7", "status": 422, "times": 0}, *pods]}  # -0007, -0017 refused
    sim = kubesim_factory({**sim_cluster, "faults": faults}, kubelet="simulated")
    run = spec("pod-startup", count=COUNT, concurrency=5, timeout=120, campaign="a" * 40)
    tl = run_cp(run, kube=sim)
    assert len(LONG) == 253 and len(tl.retried) == COUNT - 2 and tl.errors() == 2, (len(tl.retried), tl.errors())
    assert {r.server.get("node") for r in tl.objects.values() if r.error is None} == {LONG}  # it ran there
    lines = {r.name: escaped(r.line()) for r in tl.objects.values()}
    retried = {name: escaped({name: why}) for name, why in tl.retried.items()}
    ok = [lines[r.name] for r in tl.objects.values() if r.error is None]
    bound = dispatch.object_bytes("pod-startup")
    assert max(ok) <= bound, (max(ok), bound)  # 500 before: ~740
    assert max(retried.values()) <= dispatch.RETRY_BYTES
    size = encoded(run, tl.jsonl())
    assert size <= dispatch.log_bytes(COUNT, "pod-startup"), (size, dispatch.log_bytes(COUNT, "pod-startup"))
    # the largest count allowed at 1 MiB, each of its objects as large as the largest here, the most that may fail
    # failed as those here: its log fits
    rest = size - sum(lines.values()) - sum(retried.values())
    n = dispatch.max_count(MIB, "pod-startup")
    failed = max(lines[r.name] for r in tl.objects.values() if r.error is not None)
    worst = rest + (n - allowance(n)) * max(ok) + allowance(n) * failed + n * max(retried.values())
    assert worst <= MIB, (n, worst)


def test_the_runs_own_node_name_takes_a_part_of_the_fixed_bytes() -> None:
    """The run's own node (the campaign's node name, up to 253 characters) is in the event once, in its run spec
    (1,751 bytes with a campaign name as long), beside the header and the summary within dispatch.FIXED_BYTES."""
    run = spec("pod-startup", count=1).model_copy(update={"node": LONG, "campaign": "c" * 253})
    assert encoded(run, "") <= dispatch.FIXED_BYTES // 4
