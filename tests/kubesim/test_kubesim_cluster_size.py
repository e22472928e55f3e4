"""The size of a cluster file kubesim reads (cluster.read_yaml, review r5 L1 of b8b1216): a cap of 4 MiB refused a
5,000-node cluster written one node at a time with realistic labels (4.3 MB), and its advice ('give the cluster file')
did not say how to make it smaller. The cap is 16 MiB now (libyaml's loader, when PyYAML has it, reads such a file
in a few seconds), and the refusal names `count: N` with `{i}`."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax_kubesim import cluster

NODES = 5000


def _node(i: int) -> str:
    labels = "".join(f"      example.com/label-{k}: value-{k}\n" for k in range(14))
    return (f"- name: worker-{i:05d}\n  arch: amd64\n  labels:\n"
            f"      topology.kubernetes.io/zone: zone-{i % 3}\n      kubernetes.io/hostname: worker-{i:05d}\n"
            f"      node.kubernetes.io/instance-type: m6i.2xlarge\n      topology.kubernetes.io/region: eu-west-1\n"
            f"{labels}  capacity: {{cpu: '16', memory: 64Gi, pods: '110', ephemeral-storage: 500Gi}}\n"
            f"  allocatable: {{cpu: 15500m, memory: 62Gi, pods: '110'}}\n"
            f"  taints:\n  - {{key: dedicated, value: bench, effect: NoSchedule}}\n")


def test_five_thousand_nodes_with_labels_are_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("apiVersion: podtax.io/v1alpha1\nkind: SimulatedCluster\nnodes:\n"
                    + "".join(_node(i) for i in range(NODES)))
    assert path.stat().st_size > 4 * 1024 * 1024  # above the cap of b8b1216
    data = cluster.load(path)
    assert len(data["nodes"]) == NODES
    assert data["nodes"][-1]["labels"]["example.com/label-13"] == "value-13"


def test_a_file_above_the_cap_names_count_and_i(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"# padding\n" * (cluster.MAX_CLUSTER_BYTES // 10 + 1))
    with pytest.raises(ValueError, match=r"holds more than 16 MiB: .*one entry with `count: N` and `\{i\}` in its "
                                         r"name \(name: worker-\{i\}, count: 5000\)"):
        cluster.read_yaml(path)
