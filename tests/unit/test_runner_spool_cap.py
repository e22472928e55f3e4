"""The runner's spool (PODTAX_RUNNER_SPOOL_DIR) is capped at spool.MAX_BYTES, and its copies are held in memory by the
runner that writes them and the one that sends them at its start (spool.py). The cap was 256 MiB, the runner's whole
memory limit in deploy/k8s/runner.yaml: a full spool left a starting runner no room. It must leave room."""

from __future__ import annotations

from pathlib import Path

import yaml
from podtax_runner import spool

ROOT = Path(__file__).resolve().parents[2]
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def runner_memory_limit() -> int:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy/k8s/runner.yaml").read_text()) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "runner")
    limit = container["resources"]["limits"]["memory"]
    return int(limit[:-2]) * UNITS[limit[-2:]]


def test_the_spool_leaves_room_under_the_runners_memory_limit() -> None:
    assert runner_memory_limit() // 4 >= spool.MAX_BYTES, (spool.MAX_BYTES, runner_memory_limit())


def test_the_documented_cap_is_the_code_s() -> None:
    said = f"{spool.MAX_BYTES // 2**20} MiB"
    for doc in ("docs/configuration.md", "docs/control-plane.md", "services/runner/README.md"):
        text = (ROOT / doc).read_text()
        assert said in text and "at most 256 MiB" not in text and "256 MiB in all" not in text, doc
