"""deploy/k8s: the services whose images set PODTAX_HEALTH_PORT declare that port and probe it (the scheduler's
image exposed 8081 and podtax-config set it, but nothing served it and its probes used /metrics on 9464)."""

from __future__ import annotations

import pytest

from tests.deploy._util import K8S, REPO, load_all

HEALTH_PORT = 8081
PROBED = ["runner", "parser", "scheduler"]  # the analyzer probes its API (8700), which says more (storage)


@pytest.mark.parametrize("service", PROBED)
def test_health_port_declared_and_probed(service: str) -> None:
    assert f"PODTAX_HEALTH_PORT={HEALTH_PORT}" in (REPO / "services" / service / "Dockerfile").read_text()
    assert f"PODTAX_HEALTH_PORT={HEALTH_PORT}" in (K8S / "kustomization.yaml").read_text()
    deployment = next(o for o in load_all(K8S / f"{service}.yaml") if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports.get("health") == HEALTH_PORT, f"{service}: no port 'health' {HEALTH_PORT}: {ports}"
    paths = {kind: (container[kind]["httpGet"]["path"], container[kind]["httpGet"]["port"])
             for kind in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert paths == {"startupProbe": ("/healthz", "health"), "livenessProbe": ("/healthz", "health"),
                     "readinessProbe": ("/readyz", "health")}, f"{service}: {paths}"
