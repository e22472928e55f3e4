"""pytest fixtures (entry point pytest11 'podtax_nomadsim'):

    nomadsim          a running SIMULATED Nomad API (one plugin 'hostpath', zero latency, ACLs off)
    nomadsim_factory  nomadsim_factory(cluster=None, acl_token=..., refuse_creates_after=..., seed=...)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from podtax_nomadsim.testing import Sim, start


@pytest.fixture
def nomadsim_factory() -> Iterator[Callable[..., Sim]]:
    sims: list[Sim] = []

    def factory(cluster: Any = None, **options: Any) -> Sim:
        sim = start(cluster, **options)
        sims.append(sim)
        return sim

    yield factory
    for sim in sims:
        sim.stop()


@pytest.fixture
def nomadsim(nomadsim_factory: Callable[..., Sim]) -> Sim:
    return nomadsim_factory()
