"""pytest fixtures (entry point pytest11 'podtax_kubesim'):

    kubesim          a running emulator (default small mixed cluster, simulated kubelet), per test
    kubesim_factory  call it with start()'s arguments: kubesim_factory(cluster, kubelet="exec", ...)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from podtax_kubesim.testing import Sim, start


@pytest.fixture
def kubesim_factory(tmp_path: Path) -> Iterator[Callable[..., Sim]]:
    sims: list[Sim] = []

    def factory(cluster: Any = None, **kwargs: Any) -> Sim:
        kwargs.setdefault("workdir", tmp_path / f"kubesim-{len(sims)}")
        sim = start(cluster, **kwargs)
        sims.append(sim)
        return sim

    yield factory
    for sim in sims:
        sim.stop()


@pytest.fixture
def kubesim(kubesim_factory: Callable[..., Sim]) -> Sim:
    return kubesim_factory()
