"""`podtax-scheduler --kubeconfig F` with F no kubeconfig (binary, empty, tab-indented) and NATS down: it dialled NATS
first and said "cannot reach NATS", exit 1, and the file was never named (sweep hU). The kubeconfig is read before
NATS now: one line naming the file and the fix, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCHEDULER = str(Path(sys.executable).with_name("podtax-scheduler"))

KUBECONFIGS = [
    # name, content, what the one line says of it
    ("garbage.bin", b"\xa4\x00\xff\xfe", "UnicodeDecodeError"),
    ("empty.yaml", b"", "is empty"),
    ("tabs.yaml", b"apiVersion: v1\nclusters:\n\t- name: x\n", "ScannerError"),
    ("list.yaml", b"- a\n- b\n", ""),
]


@pytest.mark.parametrize(("name", "content", "why"), KUBECONFIGS, ids=[k[0] for k in KUBECONFIGS])
def test_an_unusable_kubeconfig_is_named_before_nats_is_dialled(tmp_path: Path, name: str, content: bytes,
                                                                  why: str) -> None:
    (tmp_path / name).write_bytes(content)
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([SCHEDULER, "--kubeconfig", name], cwd=tmp_path, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"podtax-scheduler: PODTAX_SCHEDULER_KUBECONFIG (or --kubeconfig): cannot load "
                                  f"Kubernetes access from {name} ("), done.stderr
    assert why in done.stderr and "at a working kubeconfig" in done.stderr, done.stderr
    assert "NATS" not in done.stderr
