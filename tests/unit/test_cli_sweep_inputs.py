"""Wrong input to the commands podtax runs through its service and tool packages (`podtax kubesim`, `simulate`,
`volumes cleanup`), through the installed `podtax` script (usage sweep hE): each is ONE line and exit 2.

Before: a file far larger than any cluster, workload or kubeconfig (a log or an image named by mistake) was parsed as
YAML for minutes (50 MB: no answer in 30 s); a newline in a value split the line; `--namespace ""` (an unset $NS)
cleaned every namespace, as if none was given; an empty --workload, --db or --kubeconfig was the current folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PODTAX = str(Path(sys.executable).with_name("podtax"))
CLUSTER = str(Path(__file__).resolve().parents[2] / "examples" / "clusters" / "mixed.yaml")
BIG = "big.yaml"  # 5 MiB of YAML text: above the kubeconfig's cap (4 MiB) and the workload's (1 MiB)
HUGE = "huge.yaml"  # 17 MiB: above the cluster file's (16 MiB: 5,000 nodes with labels are 4.3 MB)

CASES = {  # id: (argv, a fragment of the one line)
    "kubesim huge cluster": (["kubesim", "--cluster", HUGE], "holds more than 16 MiB: a cluster file is YAML of a "
                             "few hundred bytes per node; write nodes alike as one entry with `count: N` and `{i}`"),
    "kubesim newline cluster": (["kubesim", "--cluster", "a\nb.yaml"], "--cluster a\\nb.yaml: No such file"),
    "kubesim newline host": (["kubesim", "--cluster", CLUSTER, "--host", "a\nb"], "--host a\\nb:"),
    "simulate huge workload": (["simulate", "--campaign", "c", "--workload", BIG],
                               f"the workload {BIG} holds more than 1,048,576 bytes"),
    "simulate empty workload": (["simulate", "--campaign", "c", "--workload", ""], "the path is empty"),
    "simulate empty db": (["simulate", "--campaign", "c", "--workload", BIG, "--db", ""], "the path is empty"),
    "volumes empty namespace": (["volumes", "cleanup", "--namespace", ""],
                                "'' is not a namespace name (letters, digits and '-', as Kubernetes and Nomad name "
                                "them); drop --namespace to clean every namespace"),
    "volumes spaced namespace": (["volumes", "cleanup", "--namespace", "a b"], "'a b' is not a namespace name"),
    "volumes huge kubeconfig": (["volumes", "cleanup", "--kubeconfig", BIG],
                                f"--kubeconfig {BIG}: holds 5,242,880 bytes, more than a kubeconfig (4,194,304 at "
                                "most): keep the context to clean, e.g. kubectl config view --minify --flatten "
                                "--context <ctx> > one.kubeconfig"),
    "volumes newline kubeconfig": (["volumes", "cleanup", "--kubeconfig", "a\nb"], "--kubeconfig a\\nb: no such file"),
    "volumes empty kubeconfig": (["volumes", "cleanup", "--kubeconfig", ""], "the path is empty"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    argv, fragment = CASES[case]
    (tmp_path / BIG).write_text(("key: " + "x" * 1018 + "\n") * 5 * 1024)
    if HUGE in argv:
        (tmp_path / HUGE).write_text(("key: " + "x" * 1018 + "\n") * 17 * 1024)
    env = {**os.environ, "PODTAX_DATA_DIR": str(tmp_path / "data"), "PODTAX_API_URL": "http://127.0.0.1:9",
           "PODTAX_NATS_URL": "nats://127.0.0.1:9", "HOME": str(tmp_path), "COLUMNS": "200"}
    for name in ("KUBECONFIG", "PODTAX_RUNNER_KUBECONFIG", "NOMAD_ADDR", "PODTAX_RUNNER_NOMAD_ADDR"):
        env.pop(name, None)
    done = subprocess.run([PODTAX, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr + done.stdout
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert fragment in lines[0], lines[0]
