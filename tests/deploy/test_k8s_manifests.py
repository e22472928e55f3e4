"""deploy/k8s: every object is a valid Kubernetes object (real client models) and every pod is hardened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kubernetes import client

from tests.deploy._util import K8S, PENDING_VARIABLES, UID, known_variables, kubectl, kustomize, load_all

WORKLOAD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
needs_kubectl = pytest.mark.skipif(kubectl() is None, reason="kubectl is not installed: rendering not checked")


def model_name(obj: dict) -> str:
    version = obj["apiVersion"].rsplit("/", 1)[-1]
    return version[0].upper() + version[1:] + obj["kind"]


def deserialize(obj: dict):
    """Turn a manifest into the kubernetes client's model; fail on any field the model does not know."""
    api = client.ApiClient()
    model = api._ApiClient__deserialize(obj, model_name(obj))
    back = api.sanitize_for_serialization(model)
    unknown = sorted(_dropped(obj, back))
    assert not unknown, f"{obj['kind']}/{obj['metadata']['name']}: fields unknown to the API: {unknown}"
    return model


def _dropped(original, back, path: str = "") -> list[str]:
    """Paths present in `original` but lost in the round trip through the model (typos, wrong nesting)."""
    if isinstance(original, dict):
        if not isinstance(back, dict):
            return [path or "/"]
        out = []
        for key, value in original.items():
            if key not in back:
                if value not in (None, {}, []):
                    out.append(f"{path}.{key}")
            else:
                out += _dropped(value, back[key], f"{path}.{key}")
        return out
    if isinstance(original, list):
        if not isinstance(back, list) or len(back) != len(original):
            return [path]
        return [p for i, (a, b) in enumerate(zip(original, back, strict=True)) for p in _dropped(a, b, f"{path}[{i}]")]
    return []


@pytest.fixture(scope="module")
def raw_objects() -> list[dict]:
    return [obj for path in MANIFESTS for obj in load_all(path)]


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    if kubectl() is None:
        pytest.skip("kubectl is not installed: rendering not checked")
    return kustomize(K8S)


def pod_specs(objects: list[dict]):
    for obj in objects:
        if obj["kind"] in WORKLOAD_KINDS:
            model = deserialize(obj)
            yield f"{obj['kind']}/{obj['metadata']['name']}", obj, model.spec.template.spec


def find(objects: list[dict], kind: str, name: str, namespace: str | None = None) -> dict:
    hits = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name
            and (namespace is None or o["metadata"].get("namespace") == namespace)]
    assert len(hits) == 1, f"expected one {kind}/{name} in {namespace}, found {len(hits)}"
    return hits[0]


# ---- the files themselves ---------------------------------------------------------------------

def test_kustomization_lists_every_manifest_and_only_existing_files():
    kust = load_all(K8S / "kustomization.yaml")[0]
    listed = set(kust["resources"])
    on_disk = {p.name for p in MANIFESTS}
    assert listed == on_disk, f"missing from kustomization: {on_disk - listed}; listed but absent: {listed - on_disk}"
    assert "namespace" not in kust, "a top-level namespace would move podtax-runs objects into one namespace"


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_object_deserializes_into_the_real_client_models(path: Path):
    objects = load_all(path)
    assert objects
    for obj in objects:
        deserialize(obj)
        meta = obj["metadata"]
        if obj["kind"] not in {"Namespace", "ClusterRole", "ClusterRoleBinding"}:
            assert meta.get("namespace") in {"podtax", "podtax-runs"}, f"{obj['kind']}/{meta['name']} has no namespace"


def test_the_round_trip_check_catches_a_misspelled_field():
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
           "spec": {"containers": [{"name": "c", "image": "i:1", "securityContext": {"readOnlyRootFileSystem": True}}]}}
    with pytest.raises(AssertionError, match="readOnlyRootFileSystem"):
        deserialize(bad)


# ---- every pod is hardened ---------------------------------------------------------------------

def test_every_pod_is_hardened(raw_objects):
    specs = list(pod_specs(raw_objects))
    assert {name for name, _, _ in specs} == {
        "StatefulSet/nats", "Deployment/runner", "Deployment/parser", "StatefulSet/analyzer", "Deployment/scheduler"}
    for name, _, spec in specs:
        psc = spec.security_context
        assert psc and psc.run_as_non_root is True and psc.run_as_user == UID, name
        assert psc.seccomp_profile and psc.seccomp_profile.type == "RuntimeDefault", name
        assert not spec.host_network and not spec.host_pid and not spec.host_ipc, name
        for c in (spec.init_containers or []) + spec.containers:
            where = f"{name} container {c.name}"
            sc = c.security_context
            assert sc is not None, where
            assert sc.allow_privilege_escalation is False, where
            assert sc.read_only_root_filesystem is True, where
            assert sc.privileged in (None, False), where
            assert sc.run_as_user in (None, UID) and sc.run_as_non_root in (None, True), where
            assert sc.capabilities and "ALL" in (sc.capabilities.drop or []), where
            assert not (sc.capabilities.add or []), where
            for kind in ("cpu", "memory"):
                assert kind in (c.resources.requests or {}), f"{where}: no {kind} request"
                assert kind in (c.resources.limits or {}), f"{where}: no {kind} limit"
            assert ":" in c.image and not c.image.endswith(":latest"), f"{where}: image not pinned"


def test_every_container_has_exec_free_probes_on_declared_ports(raw_objects):
    for name, _, spec in pod_specs(raw_objects):
        for c in spec.containers:
            ports = {p.name for p in c.ports or []} | {p.container_port for p in c.ports or []}
            for kind in ("liveness_probe", "readiness_probe"):
                probe = getattr(c, kind)
                assert probe is not None, f"{name}/{c.name}: no {kind}"
                exec_probe = getattr(probe, "var_exec", getattr(probe, "_exec", None))
                assert exec_probe is None, f"{name}/{c.name}: {kind} is an exec probe"
                assert probe.http_get is not None, f"{name}/{c.name}: {kind} is not HTTP"
                assert probe.http_get.port in ports, f"{name}/{c.name}: {kind} port {probe.http_get.port} undeclared"


def test_every_podtax_service_is_scraped_on_a_declared_port(raw_objects):
    seen = set()
    for obj in raw_objects:
        if obj.get("kind") not in ("Deployment", "StatefulSet"):
            continue
        name = obj["metadata"]["name"]
        template = obj["spec"]["template"]
        annotations = template["metadata"].get("annotations") or {}
        if annotations.get("prometheus.io/scrape") != "true":
            continue
        port = int(annotations["prometheus.io/port"])
        declared = {p["containerPort"] for c in template["spec"]["containers"] for p in c.get("ports", [])}
        assert port in declared, f"{name}: scrape port {port} not declared"
        assert annotations.get("prometheus.io/path", "/metrics") == "/metrics"
        seen.add(name)
    assert {"analyzer", "parser", "runner"} <= seen, seen


def test_writable_paths_are_volumes(raw_objects):
    """With a read-only root filesystem, /tmp and data directories must be volumes."""
    for name, obj, spec in pod_specs(raw_objects):
        claims = {t["metadata"]["name"] for t in obj["spec"].get("volumeClaimTemplates", [])}
        volumes = {v.name for v in spec.volumes or []} | claims
        for c in spec.containers:
            mounts = {m.mount_path: m.name for m in c.volume_mounts or []}
            assert set(mounts.values()) <= volumes, f"{name}: mount of an undefined volume"
            if c.image.startswith("ghcr.io/podtax/"):
                assert "/tmp" in mounts, f"{name}: Python services need a writable /tmp"
    analyzer = find(raw_objects, "StatefulSet", "analyzer")
    assert analyzer["spec"]["replicas"] == 1, "DuckDB has one writer"
    env = {e["name"]: e.get("value") for e in analyzer["spec"]["template"]["spec"]["containers"][0]["env"]}
    mounts = {m["mountPath"] for m in analyzer["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
    assert os.path.dirname(env["PODTAX_ANALYZER_DB"]) in mounts, "the DuckDB file must live on the PVC"
    assert env["PODTAX_ANALYZER_HOST"] == "0.0.0.0"
    nats = find(raw_objects, "StatefulSet", "nats")
    assert nats["spec"]["volumeClaimTemplates"], "JetStream needs a persistent volume"
    conf = find(raw_objects, "ConfigMap", "nats-config")["data"]["nats.conf"]
    assert "jetstream" in conf and "store_dir: /data/jetstream" in conf
    assert {"mountPath": "/data", "name": "data"} in nats["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]


def test_nats_is_a_three_server_cluster_with_replicated_streams(raw_objects):
    nats = find(raw_objects, "StatefulSet", "nats")
    assert nats["spec"]["replicas"] == 3 and nats["spec"]["serviceName"] == "nats-headless"
    conf = find(raw_objects, "ConfigMap", "nats-config")["data"]["nats.conf"]
    routes = [f"nats://nats-{i}.nats-headless.podtax.svc:6222" for i in range(3)]
    assert "cluster {" in conf and all(r in conf for r in routes), "every server routes to the three"
    ports = {p["name"]: p["containerPort"] for p in nats["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports["cluster"] == 6222
    pdb = find(raw_objects, "PodDisruptionBudget", "nats")
    assert pdb["spec"]["maxUnavailable"] == 1, "a drain keeps the JetStream quorum (2 of 3)"
    kustomization = (K8S / "kustomization.yaml").read_text()
    assert "PODTAX_NATS_REPLICAS=3" in kustomization, "streams and KV buckets replicated three ways"


def test_services_select_pods_and_name_their_ports(raw_objects):
    workloads = [obj for obj in raw_objects if obj["kind"] in WORKLOAD_KINDS]
    services = [obj for obj in raw_objects if obj["kind"] == "Service"]
    assert {s["metadata"]["name"] for s in services} >= {"nats", "nats-headless", "analyzer"}
    assert find(raw_objects, "Service", "nats-headless")["spec"]["clusterIP"] == "None"
    assert find(raw_objects, "Service", "analyzer")["spec"]["ports"][0]["port"] == 8700
    for svc in services:
        selector = svc["spec"]["selector"]
        targets = [w for w in workloads
                   if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()]
        assert targets, f"Service {svc['metadata']['name']} selects no pod"
        for port in svc["spec"]["ports"]:
            names = {p["name"] for w in targets for c in w["spec"]["template"]["spec"]["containers"]
                     for p in c.get("ports", [])}
            assert port["targetPort"] in names, f"Service {svc['metadata']['name']}: no port {port['targetPort']}"
    for w in workloads:
        assert w["spec"]["selector"]["matchLabels"].items() <= w["spec"]["template"]["metadata"]["labels"].items()


# ---- RBAC: exactly what each service needs, never a wildcard -----------------------------------

def _rules(obj: dict) -> set[tuple[str, str, str]]:
    return {(group, res, verb) for r in obj["rules"] for group in r.get("apiGroups", [""])
            for res in r.get("resources", r.get("nonResourceURLs", [])) for verb in r["verbs"]}


def test_rbac_grants_exactly_what_the_services_need(raw_objects):
    for obj in raw_objects:
        if obj["kind"] in {"Role", "ClusterRole"}:
            assert "*" not in {x for rule in _rules(obj) for x in rule}, f"wildcard in {obj['metadata']['name']}"
    runner_role = _rules(find(raw_objects, "Role", "podtax-runner", "podtax-runs"))
    for verb in ("create", "get", "list", "watch", "delete"):
        assert ("batch", "jobs", verb) in runner_role
    for res in ("pods", "pods/log"):
        for verb in ("get", "list", "watch"):
            assert ("", res, verb) in runner_role
    # pods are created and deleted by pod-startup and volume-churn's consumers; nothing else on pods/*
    assert {("", "pods", v) for v in ("create", "delete")} <= runner_role
    assert not {r for r in runner_role if r[1].startswith("pods/") and r[2] not in {"get", "list", "watch"}}
    # a claim given up Pending quotes its newest event (controlplane/kevents.py): list, and nothing more, on events
    assert {r for r in runner_role if r[1] == "events"} == {("", "events", "list")}
    assert ("", "/metrics", "get") in _rules(find(raw_objects, "ClusterRole", "podtax-runner"))
    assert ("", "nodes", "list") in _rules(find(raw_objects, "ClusterRole", "podtax-runner"))
    sched = _rules(find(raw_objects, "ClusterRole", "podtax-scheduler"))
    # POST namespaces/<ns>/bindings is RBAC's `bindings`; tests/scheduler/test_rbac_calls.py checks against its calls
    expected = {("", r, v) for r in ("pods", "nodes", "namespaces") for v in ("list", "watch")} | {
        ("", "bindings", "create"), ("", "pods/status", "patch")} | {("", "events", v) for v in ("create", "patch")}
    assert sched == expected, (sched - expected, expected - sched)
    assert not {r for r in sched if r[2] == "delete"}
    leases = _rules(find(raw_objects, "Role", "podtax-scheduler-leader-election", "podtax"))
    assert {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")} <= leases
    # the scheduler must look for its Lease where the Role allows it (its default is kube-system)
    container = find(raw_objects, "Deployment", "scheduler")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PODTAX_SCHEDULER_LEASE_NAMESPACE"] == "podtax"


def test_bindings_reference_existing_roles_and_service_accounts(raw_objects):
    accounts = {(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in raw_objects if o["kind"] == "ServiceAccount"}
    for obj in raw_objects:
        if obj["kind"] in {"RoleBinding", "ClusterRoleBinding"}:
            kind = obj["roleRef"]["kind"]
            namespace = obj["metadata"].get("namespace") if kind == "Role" else None
            find(raw_objects, kind, obj["roleRef"]["name"], namespace)
            for subject in obj["subjects"]:
                assert (subject["namespace"], subject["name"]) in accounts, subject
    for name, obj, spec in pod_specs(raw_objects):
        if spec.service_account_name:
            assert (obj["metadata"]["namespace"], spec.service_account_name) in accounts, name
        needs_api = spec.service_account_name in {"podtax-runner", "podtax-scheduler"}
        assert spec.automount_service_account_token is (None if needs_api else False), (
            f"{name}: only the runner and the scheduler call the API server")


def test_namespaces_and_pod_security(raw_objects):
    podtax = find(raw_objects, "Namespace", "podtax")["metadata"]["labels"]
    assert podtax["pod-security.kubernetes.io/enforce"] == "restricted"
    runs = find(raw_objects, "Namespace", "podtax-runs")["metadata"]["labels"]
    assert runs["pod-security.kubernetes.io/enforce"] == "baseline"
    policy = find(raw_objects, "NetworkPolicy", "benchmark-pods-no-network", "podtax-runs")["spec"]
    assert policy["podSelector"] == {} and set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in policy and "egress" not in policy


def test_every_podtax_variable_is_a_real_setting(raw_objects):
    kust = load_all(K8S / "kustomization.yaml")[0]
    names = {lit.split("=", 1)[0] for gen in kust["configMapGenerator"] for lit in gen.get("literals", [])}
    for _, _, spec in pod_specs(raw_objects):
        names |= {e.name for c in spec.containers for e in c.env or []}
    unknown = {n for n in names if n.startswith("PODTAX_")} - known_variables() - PENDING_VARIABLES
    assert not unknown, f"not settings of podtax.config: {sorted(unknown)}"


# ---- what kustomize renders ---------------------------------------------------------------------

@needs_kubectl
def test_kustomize_renders_valid_hardened_objects(rendered):
    kinds = {o["kind"] for o in rendered}
    assert {"Namespace", "StatefulSet", "Deployment", "Service", "ConfigMap", "ClusterRole", "Role"} <= kinds
    config_maps = {o["metadata"]["name"] for o in rendered if o["kind"] == "ConfigMap"}
    for obj in rendered:
        deserialize(obj)
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "podtax"
    for name, _, spec in pod_specs(rendered):
        for c in spec.containers:
            for source in c.env_from or []:
                if source.secret_ref is not None:  # Secrets are the operator's (see README.md)
                    continue
                assert source.config_map_ref.name in config_maps, f"{name}: envFrom an absent ConfigMap"
    images = {c["image"] for o in rendered if o["kind"] in WORKLOAD_KINDS
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert images == {f"ghcr.io/podtax/{s}:0.1.0" for s in ("runner", "parser", "analyzer", "scheduler")} | {
        "nats:2.15.1"}
    assert sum(1 for o in rendered if o["kind"] == "StatefulSet") == 2


@needs_kubectl
def test_hdparm_component_relaxes_only_the_runs_namespace(tmp_path: Path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    base = os.path.relpath(K8S, overlay)
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{base}]\ncomponents: [{base}/components/hdparm-privileged]\n")
    objects = kustomize(overlay)
    runs = find(objects, "Namespace", "podtax-runs")["metadata"]["labels"]
    assert runs["pod-security.kubernetes.io/enforce"] == "privileged"
    podtax = find(objects, "Namespace", "podtax")["metadata"]["labels"]
    assert podtax["pod-security.kubernetes.io/enforce"] == "restricted"


@needs_kubectl
def test_images_can_be_overridden(tmp_path: Path):
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{os.path.relpath(K8S, overlay)}]\n"
        "images:\n  - name: ghcr.io/podtax/parser\n    newName: registry.example/parser\n    newTag: '9.9'\n")
    parser = find(kustomize(overlay), "Deployment", "parser")
    assert parser["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/parser:9.9"
