"""provisioner.resyncSeconds (review r8 M2 of bc00ee3): 0 or less made the PV controller's resync reschedule itself at
once for ever (call_later(0)), one CPU busy and the API 30 times slower (r8's spin.py, spin2.py). A cluster file, or
the mapping given to the emulator, with such a period is refused when it is loaded, naming the key and the range."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from podtax_kubesim import cluster

NODES = {"nodes": [{"name": "n1"}]}


@pytest.mark.parametrize("value", [0, -1, -0.5, math.nan, "15s"])
def test_a_resync_period_of_zero_or_less_is_refused(tmp_path: Path, value: object) -> None:
    what = r"provisioner\.resyncSeconds must be a number of seconds greater than 0"
    with pytest.raises(ValueError, match=what):
        cluster.load({**NODES, "provisioner": {"resyncSeconds": value}})
    if isinstance(value, (int, float)) and math.isfinite(value):
        path = tmp_path / "c.yaml"
        path.write_text(f"nodes:\n- name: n1\nprovisioner:\n  resyncSeconds: {value}\n")
        with pytest.raises(ValueError, match=f"{path}: {what}"):
            cluster.load(path)


@pytest.mark.parametrize("value", [0.2, 15, 3600])
def test_a_positive_resync_period_is_kept(value: float) -> None:
    assert cluster.load({**NODES, "provisioner": {"resyncSeconds": value}})["provisioner"]["resyncSeconds"] == value
