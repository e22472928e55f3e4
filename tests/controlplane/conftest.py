"""Fixtures of the control-plane tests: the Kubernetes emulator with a provisioning StorageClass and
known injected latencies, the simulated Nomad, and helpers to run one control-plane run."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from typing import Any

import pytest
from podtax import config, events, templates
from podtax_kubesim.testing import Sim
from podtax_runner.controlplane.execute import execute
from podtax_runner.controlplane.nomad import NomadConfig
from podtax_runner.controlplane.timeline import Timeline

NODE = "node-1"
CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "sim-fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
         "provisioner": "sim.csi.podtax.io", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


def cluster(provision: Any = 0.0, delete: Any = 0.0, seed: int = 7) -> dict[str, Any]:
    return {"nodes": [{"name": NODE, "capacity": {"cpu": "4", "memory": "8Gi"}}], "storageClasses": [CLASS],
            "provisioner": {"provisionLatency": provision, "deleteLatency": delete, "seed": seed}}


def lognormal(median: float, sigma: float) -> dict[str, Any]:
    return {"distribution": "lognormal", "median": median, "sigma": sigma}


def lognormal_quantile(median: float, sigma: float, q: float) -> float:
    return median * float(__import__("math").exp(sigma * statistics.NormalDist().inv_cdf(q)))


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def phase(tl: Timeline, start: str, end: str) -> list[float]:
    return [r.t[end] - r.t[start] for r in tl.objects.values() if start in r.t and end in r.t]


def spec(test: str, env: str = "kubernetes", timeout: float = 60, campaign: str = "cp", rep: int = 0,
         **params: Any) -> events.RunSpec:
    validated = templates.get(test).validate(params).model_dump()
    return events.RunSpec(run_id=f"{campaign}-{test}-{env}-{rep}", campaign=campaign, node=NODE, env=env, test=test,
                          params=validated, timeout_s=timeout)


@pytest.fixture
def run_cp(tmp_path: Any) -> Callable[..., Timeline]:
    """run_cp(run, kube=sim, nomad=nsim, stop=None) -> the timeline (raises Aborted like the runner sees)."""

    def go(run: events.RunSpec, kube: Sim | None = None, nomad: Any = None,
           stop: threading.Event | None = None) -> Timeline:
        settings = config.load(config.RunnerSettings, runner_kubeconfig=kube.kubeconfig if kube else None)
        cfg = NomadConfig(address=nomad.url, token=nomad.token) if nomad is not None else None
        return execute(run, settings, stop, nomad_cfg=cfg)

    return go


def ours(sim: Sim, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """Objects carrying podtax's control-plane label (PVs: those bound to such claims)."""
    if plural == "persistentvolumes":
        return [pv for pv in sim.objects(plural)
                if ((pv["spec"].get("claimRef") or {}).get("name") or "").startswith("podtax-")]
    return [o for o in sim.objects(plural, namespace)
            if (o["metadata"].get("labels") or {}).get("podtax.io/kind") == "control-plane"]
