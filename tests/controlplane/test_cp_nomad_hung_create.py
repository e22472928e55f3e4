"""A Nomad create that got no answer in time: Nomad goes on with it after the client left (its HTTP handler's RPC is
not cancelled), so the volume may be registered after the run's cleanup looked for it, and stay. Before, nothing
said so: the cleanup found nothing and the run's left_behind read 0. Now the run says which creates got no answer and
how to look for their volumes later. Real HTTP against nomadsim's fault hangCreates."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest
from podtax_runner.controlplane import nomad

from tests.controlplane.conftest import spec

PLUGIN = {"id": "hostpath", "provider": "hostpath.csi.podtax.io"}


def test_a_create_without_answer_is_said_to_maybe_stay(nomadsim_factory: Any, run_cp: Any,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(nomad, "TIMEOUT", httpx.Timeout(1.0, connect=1.0))  # a Nomad call's attempt (60 s in a run)
    monkeypatch.setattr(nomad, "CLEANUP_WAIT_S", 2.0)
    sim = nomadsim_factory({"plugins": [PLUGIN], "faults": {"hangCreates": ["-0002"]}})
    caplog.set_level(logging.WARNING, logger="podtax.runner.controlplane")
    tl = run_cp(spec("volume-churn", env="nomad", campaign="late", count=4, timeout=30, plugin_id="hostpath"),
                nomad=sim)
    hung = next(n for n in tl.objects if n.endswith("-0002"))
    assert tl.errors() == 1 and "given_up" in tl.objects[hung].t and tl.left_behind == 0
    said = [r.getMessage() for r in caplog.records if "got no answer in time" in r.getMessage()]
    assert len(said) == 1 and hung in said[0] and "Nomad may still make those volumes" in said[0], said
    assert "podtax volumes cleanup --backend nomad --campaign late" in said[0], said
