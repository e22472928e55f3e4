"""A run that ends on an error of the executor's own (not Aborted: reason executor-error) says what its cleanup left
and how to remove it, as an Aborted run does (cleanup.tell). The Kubernetes path put it on the error (cleanup.LEFT) and
the dispatcher's failure dropped it ('RuntimeError: ...' alone); the Nomad path added it to an Aborted only (review r2).
Here the executor's delete step fails with a RuntimeError after the creates, and the cleanup, its wait made short,
leaves what is still being deleted: the real runner against kubesim and nomadsim."""

from __future__ import annotations

from typing import Any

import pytest
from podtax_runner.controlplane import cleanup, dispatch, kvolumes, nvolumes
from podtax_runner.controlplane import nomad as client

from tests.controlplane.conftest import cluster, spec


def failing_deletes(module: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`module`'s worker pool raises at its delete step (a bug of the executor's, say)."""
    real = module.pool

    def pool(ctx: Any, fn: Any, items: Any, workers: int) -> None:
        if getattr(fn, "__name__", "") == "delete":
            raise RuntimeError("the executor broke")
        real(ctx, fn, items, workers)

    monkeypatch.setattr(module, "pool", pool)


def test_kubernetes(kubesim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = kubesim_factory(cluster(delete=30.0), kubelet="none")  # a PV takes 30 s to go: the cleanup leaves them
    failing_deletes(kvolumes, monkeypatch)
    monkeypatch.setattr(cleanup, "CLEANUP_WAIT_S", 0.5)
    with pytest.raises(RuntimeError) as info:
        run_cp(spec("volume-churn", campaign="left", count=3, concurrency=3, timeout=60), kube=sim)
    detail = dispatch.executor_error(info.value)
    assert detail.startswith("RuntimeError: the executor broke; 3 object(s) still present after the cleanup's 0.5 s")
    assert detail.endswith("remove them with `podtax volumes cleanup --backend kubernetes --campaign left`"), detail


def test_nomad(nomadsim_factory: Any, run_cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = nomadsim_factory({"plugins": [{"id": "hostpath", "deleteLatency": 30.0}]})
    failing_deletes(nvolumes, monkeypatch)
    monkeypatch.setattr(client, "CLEANUP_WAIT_S", 0.5)
    with pytest.raises(RuntimeError) as info:
        run_cp(spec("volume-churn", env="nomad", campaign="left", count=3, concurrency=3, plugin_id="hostpath"),
               nomad=sim)
    detail = dispatch.executor_error(info.value)
    assert detail.startswith("RuntimeError: the executor broke; "), detail
    assert "still present after the cleanup's 0.5 s: remove them with `podtax volumes cleanup --backend nomad " \
           "--campaign left`" in detail, detail
