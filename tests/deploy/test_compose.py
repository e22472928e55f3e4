"""docker-compose.yml: NATS and every service on one Docker host, hardened, with health checks."""

from __future__ import annotations

import pytest

from tests.deploy._util import PENDING_VARIABLES, REPO, UID, known_variables, load_all

COMPOSE = REPO / "docker-compose.yml"
PODTAX_SERVICES = {"parser", "analyzer", "runner", "scheduler", "host-agent-demo"}


@pytest.fixture(scope="module")
def compose() -> dict:
    docs = load_all(COMPOSE)
    assert len(docs) == 1
    return docs[0]


def test_every_service_has_an_image_a_healthcheck_and_defined_volumes(compose):
    services = compose["services"]
    assert set(services) == {"nats"} | PODTAX_SERVICES
    declared = set(compose.get("volumes") or {})
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        assert ":" in svc["image"] and not svc["image"].endswith(":latest"), f"{name}: image not pinned"
        test = svc["healthcheck"]["test"]
        assert isinstance(test, list) and test[0] == "CMD", f"{name}: healthcheck must be exec form (no shell)"
        for volume in svc.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith(("/", ".", "$")):
                assert source in declared, f"{name}: volume {source} is not declared"
    assert declared == {v.split(":", 1)[0] for s in services.values() for v in s.get("volumes", [])
                        if not v.startswith(("/", ".", "$"))}, "a declared volume is unused"


def test_podtax_services_are_hardened_and_built_from_their_dockerfiles(compose):
    for name in PODTAX_SERVICES:
        svc = compose["services"][name]
        assert svc["user"] == f"{UID}:{UID}", name
        assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in svc["security_opt"], name
        assert not svc.get("privileged"), name
        assert any(t.startswith("/tmp") for t in svc["tmpfs"]), name
        assert svc["depends_on"]["nats"]["condition"] == "service_healthy", name
        assert svc["build"]["context"] == "."
        assert (REPO / svc["build"]["dockerfile"]).is_file(), name
        assert svc["environment"]["PODTAX_NATS_URL"] == "nats://nats:4222"


def test_nats_runs_jetstream_on_a_volume(compose):
    nats = compose["services"]["nats"]
    assert "-js" in nats["command"]
    store = nats["command"][nats["command"].index("--store_dir") + 1]
    assert any(v.endswith(":" + store) for v in nats["volumes"])


def test_analyzer_serves_8700_and_keeps_duckdb_on_a_volume(compose):
    analyzer = compose["services"]["analyzer"]
    assert any(p.endswith(":8700:8700") for p in analyzer["ports"])
    db_dir = analyzer["environment"]["PODTAX_ANALYZER_DB"].rsplit("/", 1)[0]
    assert any(v.endswith(":" + db_dir) for v in analyzer["volumes"])
    assert "8700/healthz" in " ".join(analyzer["healthcheck"]["test"])


def test_host_agent_and_scheduler_are_opt_in_profiles(compose):
    agent = compose["services"]["host-agent-demo"]
    assert agent["profiles"] == ["local-agent"]
    assert "not the host" in agent["labels"]["io.podtax.warning"]
    assert compose["services"]["scheduler"]["profiles"] == ["scheduler"]
    runner = compose["services"]["runner"]
    kubernetes = runner["environment"]["PODTAX_RUNNER_KUBERNETES"]
    assert kubernetes.endswith(":-false}"), "pod runs need a cluster: off by default"
    assert all(v.endswith(":ro") for v in runner["volumes"]), "the kubeconfig is mounted read-only"


def test_every_podtax_variable_is_a_real_setting(compose):
    names = {k for svc in compose["services"].values() for k in (svc.get("environment") or {})}
    unknown = {n for n in names if n.startswith("PODTAX_")} - known_variables() - PENDING_VARIABLES
    assert not unknown, f"not settings of podtax.config: {sorted(unknown)}"


# The file is validated against the compose specification in tests/deploy/test_images.py
# (check-jsonschema's vendored compose-spec schema, no Docker needed); `make compose-test`
# runs it for real where a Docker engine exists.
