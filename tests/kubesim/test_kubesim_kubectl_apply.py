"""`kubectl apply` with validation on (kubectl's default) against podtax kubesim: kubectl reads the
emulator's OpenAPI v3, sees `fieldValidation` on each kind's PATCH operation, and leaves validation
to the server, which refuses unknown fields like a real API server. A claim without a class gets
the default StorageClass's name (DefaultStorageClass admission)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from podtax_kubesim import openapi
from podtax_kubesim import resources as R
from podtax_kubesim.testing import Sim

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
MANIFESTS = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  restartPolicy: Never
  containers: [{name: c, image: podtax/bench:1, command: ["true"]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: bench}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: podtax/bench:1}]
"""


def kubectl(sim: Sim, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(sim.kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)


@needs_kubectl
def test_kubectl_apply_validates_and_claims_get_the_default_class(kubesim: Sim, tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(MANIFESTS)
    applied = kubectl(kubesim, "apply", "-f", str(path))  # validation on: kubectl's default
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split("\n")[:3] == ["persistentvolumeclaim/data created", "pod/web created",
                                               "job.batch/bench created"]
    claim = kubesim.get("persistentvolumeclaims", "data", "default")
    assert claim is not None and claim["spec"]["storageClassName"] == "standard"
    again = kubectl(kubesim, "apply", "-f", str(path))  # PATCH with fieldValidation=Strict
    assert again.returncode == 0 and "unchanged" in again.stdout, again.stderr
    typo = MANIFESTS.split("---")[0].replace("name: data", "name: other").replace("accessModes", "accessModez")
    refused = kubectl(kubesim, "apply", "-f", "-", stdin=typo)
    assert refused.returncode == 1
    assert 'strict decoding error: unknown field "spec.accessModez"' in refused.stderr
    assert kubesim.get("persistentvolumeclaims", "other", "default") is None
    warned = kubectl(kubesim, "apply", "--validate=warn", "-f", "-", stdin=typo)
    assert warned.returncode == 0 and 'unknown field "spec.accessModez"' in warned.stderr


def test_openapi_v3_declares_field_validation_for_every_kind() -> None:
    index = openapi.serve(["v3"])["paths"]
    assert set(index) == {"api/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1", "apis/storage.k8s.io/v1",
                          "apis/events.k8s.io/v1"}
    for r in R.RESOURCES:
        doc = openapi.serve(["v3", *(f"apis/{r.group}/{r.version}" if r.group else "api/v1").split("/")])
        patches = [p["patch"] for p in doc["paths"].values() if "patch" in p
                   and p["patch"]["x-kubernetes-group-version-kind"]["kind"] == r.kind]
        assert len(patches) == 1, r.kind
        assert {"name": "fieldValidation", "in": "query"}.items() <= patches[0]["parameters"][2].items()
    assert openapi.unknown_fields("Pod", {"spec": {"containers": [], "nodeNmae": "x"}, "metdata": {}}) == \
        ["metdata", "spec.nodeNmae"]
    assert openapi.unknown_fields("Event", {"anything": 1}) == []  # kinds without a field list are not checked


def test_the_openapi_document_says_the_version_that_version_answers(kubesim: Sim) -> None:
    """One Kubernetes version: /version said v1.30.0 and the OpenAPI document's info v1.31.0 (review r2), so a client
    reading one (kubectl version, a generator of the schema) saw another cluster than one reading the other."""
    from kubernetes import client

    said = client.VersionApi(kubesim.api_client()).get_code()
    infos = [openapi.serve(path)["info"] for path in (["v3", "api", "v1"], ["v3", "apis", "storage.k8s.io", "v1"])]
    for info in infos:
        assert said.git_version == f"{info['version']}-podtax-kubesim", (info, said.git_version)
        assert info["version"] == f"v{said.major}.{said.minor}.0", (info, said.major, said.minor)
