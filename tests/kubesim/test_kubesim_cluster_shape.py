"""A cluster file of the wrong shape, through `podtax-kubesim --cluster`: one line naming the fix and exit 2 before it
serves. Before (audit hU, session 56) a wrong type or a nameless node was a traceback once it had begun to serve
(AttributeError, KeyError; two nodes of one name a 409 ApiError), and a negative count or `node:` for `nodes:` served
a cluster without nodes without a word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KUBESIM = str(Path(sys.executable).with_name("podtax-kubesim"))

CASES = [
    # the file's text, a fragment of the one line
    ("node:\n  - name: n1\n", "unknown key(s) node; a cluster file has apiVersion, kind, name, nodes,"),
    ("nodes:\n  - arch: amd64\n", "nodes[0]: every node needs a name"),
    ("nodes:\n  - name: 5\n", "nodes[0]: every node needs a name"),
    ("nodes:\n  - name: n-{i}\n    count: abc\n", "nodes[0]: count must be a whole number of nodes (0 or more)"),
    ("nodes:\n  - name: n-{i}\n    count: -3\n", "count must be a whole number of nodes (0 or more), got -3"),
    ("nodes:\n  - name: n-{i}\n    count: 100000000\n", "more than 100,000 nodes"),
    ("nodes:\n  - name: n\n    count: 2\n", "count 2 needs '{i}' (or '{i:03d}') in the name"),
    ("nodes:\n  - name: n-{i.x}\n    count: 2\n", "count 2 needs '{i}' (or '{i:03d}') in the name"),
    ("nodes:\n  - name: n-{i}{j}\n    count: 2\n", "name 'n-{i}{j}' may hold '{i}' or '{i:03d}' (the node's number)"),
    # an AttributeError's traceback before (fxU, session 56)
    ("nodes:\n  - name: n-{i}-{i.x}\n    count: 2\n", "name 'n-{i}-{i.x}' may hold '{i}' or '{i:03d}'"),
    ("nodes:\n  - name: n1\n  - name: n1\n", "nodes[1]: a second node named 'n1'"),
    # YAML kept the last of a key given twice: the first `nodes:` list was dropped without a word (sweep hU)
    ("nodes:\n  - name: n1\nnodes:\n  - name: n2\n",
     "line 3: key 'nodes' appears twice in the same mapping (first on line 1); keep one of them"),
    ("nodes:\n  - name: n1\n    name: n2\n", "line 3: key 'name' appears twice in the same mapping (first on line 2)"),
    ("nodes:\n  - name: Bad Name\n", "'Bad Name' is not a node name"),
    ("nodes:\n  - name: -n\n", "as `podtax up --node` takes them (Kubernetes itself takes no '_'))"),
    ("nodes:\n  - name: n1\n    capacity: 4\n", "nodes[0]: 'capacity' must be a mapping, got 4"),
    ("nodes:\n  - name: n1\n    labels: [a]\n", "'labels' must be a mapping"),
    ("nodes:\n  - name: n1\n    taints: 5\n", "'taints' must be a list of mappings, got 5"),
    ("nodes:\n  - name: n1\n    conditions: [{status: 'True'}]\n", "every condition needs a type"),
    ("nodes:\n  - name: n1\n    arch: 7\n", "arch must be text"),
    ("nodes:\n  - name: n1\nsimulation: 5\n", "'simulation' must be a mapping, got 5"),
    ("nodes:\n  - name: n1\nprovisioner: [1]\n", "'provisioner' must be a mapping, got [1]"),
    ("nodes:\n  - name: n1\nnamespaces: abc\n", "'namespaces' must be a list of names, got 'abc'"),
]


@pytest.mark.parametrize(("text", "says"), CASES, ids=[says.split(":")[0][:40] for _, says in CASES])
def test_a_cluster_file_of_the_wrong_shape_is_one_line_and_exit_2(text: str, says: str, tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    proc = subprocess.run([KUBESIM, "--cluster", str(path), "--kubeconfig", str(tmp_path / "k.yaml")],
                          capture_output=True, text=True, timeout=120)  # a hang guard: it served before
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"podtax-kubesim: --cluster: {path}: ") and says in lines[0], lines[0]
    assert not (tmp_path / "k.yaml").exists()  # refused before it wrote a kubeconfig


def test_the_example_cluster_is_still_read() -> None:
    from podtax_kubesim import cluster

    assert len(cluster.load(Path(__file__).parents[2] / "examples" / "clusters" / "mixed.yaml")["nodes"]) == 5


TOKEN_FILES = [
    # the file (bytes: what a file in the test's folder holds; text: a path on this machine), the one line after
    # "podtax-kubesim: --token-file F "
    # a binary file: exit 1, "'utf-8' codec can't decode byte 0xa4 ..." before (hU, session 56)
    (b"\xa4\x00\xff", "is not text: give the file holding the API token (one line)"),
    # a regular file whose read fails (as an unreadable one does, which root reads all the same): a traceback ending
    # in "OSError: [Errno 5] Input/output error" before (fxU, session 56)
    ("/proc/self/mem", "cannot be read (Input/output error): give the file holding the API token"),
    # an empty or blank file: served with a random token before, so every client given the file's token got 401 and
    # nothing said why (hT, session 56)
    (b"", "is empty: write the API token into it, or leave --token-file out for a random one"),
    (b" \n\t\n", "is empty: write the API token into it, or leave --token-file out for a random one"),
]


@pytest.mark.parametrize(("given", "says"), TOKEN_FILES, ids=["binary", "read-fails", "empty", "blank"])
def test_a_token_file_without_a_token_to_read_is_one_line_and_exit_2(given: str | bytes, says: str,
                                                                     tmp_path: Path) -> None:
    token = tmp_path / "token" if isinstance(given, bytes) else Path(given)
    if isinstance(given, bytes):
        token.write_bytes(given)
    elif not token.is_file():
        pytest.skip(f"no {given} here")
    proc = subprocess.run([KUBESIM, "--token-file", str(token), "--kubeconfig", str(tmp_path / "k.yaml")],
                          capture_output=True, text=True, timeout=120)  # a hang guard: an empty file served before
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"podtax-kubesim: --token-file {token} {says}"]
    assert not (tmp_path / "k.yaml").exists()  # refused before it wrote a kubeconfig


TAKEN = [
    # a cluster file's nodes, the names kubesim serves
    # `podtax up --node my_node` writes its node into kubesim's cluster file: '_' is taken as PODTAX_AGENT_NODE takes
    # it (the first form of the check refused it, and `podtax up` with it)
    ([{"name": "my_node.lab-1"}], ["my_node.lab-1"]),
    # zero-padded numbers, as str.format fills them in: "count 2 needs '{i}' in the name" before (fxU, session 56)
    ([{"name": "worker-{i:03d}", "count": 2}], ["worker-000", "worker-001"]),
    ([{"name": "worker-{i:03d}"}], ["worker-000"]),  # count 1: '{i:03d}' as '{i}' (refused as no node name before)
]


@pytest.mark.parametrize(("nodes", "names"), TAKEN, ids=["underscore", "padded", "padded-one"])
def test_a_node_name_podtax_up_takes_is_taken(nodes: list[dict[str, object]], names: list[str]) -> None:
    from podtax_kubesim import cluster, cluster_checks

    assert cluster_checks.problem({"nodes": nodes}, "f") is None
    assert [n["name"] for n in cluster.expand_nodes({"nodes": nodes})] == names
