"""`make demo` says when a run missed its point: under load (an audit, load 4.7 on 2 CPUs) no pod run was
throttled and the `all` cell read "pod 21.0% faster", with nothing said."""

from __future__ import annotations

import pytest
from podtax.demo import missed_point

THROTTLED = {"primary": True, "flags": ["THROTTLED"]}
CLEAN = {"primary": True, "flags": []}
SECONDARY_THROTTLED = {"primary": False, "flags": ["THROTTLED"]}


@pytest.mark.parametrize(("cells", "threads", "says"), [
    ([CLEAN, THROTTLED], 2, None),
    ([CLEAN, CLEAN], 2, "no pod run was throttled"),
    ([CLEAN, SECONDARY_THROTTLED], 2, "no pod run was throttled"),  # the headline metric decides
    ([CLEAN], 1, "1 CPU"),
    ([], 4, "threads=4 cell"),
])
def test_the_demo_says_when_it_missed_its_point(cells: list[dict], threads: int, says: str | None) -> None:
    why = missed_point(cells, threads, load=4.7, cpus=2)
    assert (why is None) if says is None else (why is not None and says in why)
    if why and threads > 1:
        assert "load average 4.7 on 2 CPUs" in why and "idle machine" in why
