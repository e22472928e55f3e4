"""tools/template_sweep.py runs the host templates the way the host agent runs them. Its network runs named the
server 'localhost', which the host agent refuses since e1e1800 (only 127.0.0.1 or ::1): iperf3's client then ran
against no server (counted 'env'), and no such run could ever come from a campaign. Every network combination it
sweeps is now one the host agent runs, and one the agent would refuse is 'refused' without running anything."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from podtax import events, templates
from podtax_host_agent.execute import target_problem

SWEEP = Path(__file__).parents[2] / "tools" / "template_sweep.py"


@pytest.fixture(scope="module")
def sweep() -> ModuleType:
    spec = importlib.util.spec_from_file_location("template_sweep", SWEEP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_network_run_swept_is_one_the_host_agent_runs(sweep: ModuleType) -> None:
    servers = set()
    for test, params in sweep.combinations():
        if "server" not in params:
            continue
        servers.add(params["server"])
        try:
            templates.get(test).validate(params)
        except templates.TemplateError:  # a boundary value the template refuses: swept on purpose
            continue
        run = events.RunSpec(run_id="r", campaign="c", node="n", env="host", test=test, params=params)
        assert target_problem(run) is None, (test, params)
    assert servers == {"127.0.0.1", "::1"}


def test_a_run_the_host_agent_refuses_is_refused_unrun(sweep: ModuleType, tmp_path: Path) -> None:
    params = {"server": "192.0.2.1", "protocol": "tcp", "duration": 1, "parallel": 1, "reverse": False, "length": 0,
              "bitrate": "0"}
    outcome, took, detail = sweep.judge("iperf3", params, tmp_path, 5.0, 5.0, None)
    assert (outcome, took) == ("refused", 0.0)
    assert detail.startswith("iperf3 server '192.0.2.1' is not this node's loopback"), detail

