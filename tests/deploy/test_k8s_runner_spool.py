"""deploy/k8s/README.md's overlay that gives the runner's spool (PODTAX_RUNNER_SPOOL_DIR) a PVC: built with the real
`kubectl kustomize` as a user would, the runner gets the folder on that claim and stays hardened. runner.yaml itself
sets no spool (a PVC needs a StorageClass the manifest cannot assume; an emptyDir goes with the pod)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from podtax_runner import spool

from tests.deploy._util import K8S, REPO, UID, known_variables, kustomize, load_all

SECTION = "## The runner's spool"
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def overlay_files() -> dict[str, str]:
    """The files of the README's overlay, by name (each block's first line names it: `# my-overlay/<name>`)."""
    text = (K8S / "README.md").read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1)]
    files = {}
    for block in re.findall(r"```yaml\n(.*?)```", section, re.S):
        first, _, body = block.partition("\n")
        files[first.removeprefix("# my-overlay/")] = body
    return files


def runner_of(objects: list[dict]) -> dict:
    return next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "runner")


def test_the_documented_overlay_puts_the_spool_on_a_claim_and_keeps_the_runner_hardened(tmp_path: Path) -> None:
    files = overlay_files()
    assert sorted(files) == ["kustomization.yaml", "runner-spool-pvc.yaml", "runner-spool.yaml"], sorted(files)
    (tmp_path / "podtax").symlink_to(REPO)  # the README's ../podtax/deploy/k8s
    (tmp_path / "my-overlay").mkdir()
    for name, body in files.items():
        (tmp_path / "my-overlay" / name).write_text(body)
    objects = kustomize(tmp_path / "my-overlay")
    runner = runner_of(objects)
    pod = runner["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "runner")
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "PODTAX_RUNNER_SPOOL_DIR" in known_variables()
    folder = env["PODTAX_RUNNER_SPOOL_DIR"]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == folder)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"
              and o["metadata"]["name"] == volume["persistentVolumeClaim"]["claimName"]]
    assert len(claims) == 1, volume
    claim = claims[0]
    assert claim["metadata"]["namespace"] == runner["metadata"]["namespace"]
    size = claim["spec"]["resources"]["requests"]["storage"]
    assert int(size[:-2]) * UNITS[size[-2:]] >= spool.MAX_BYTES, size
    # a ReadWriteOnce claim: the old pod must be gone before the new one mounts it
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"] and runner["spec"]["strategy"]["type"] == "Recreate"
    # hardened as before: non-root, read-only root filesystem; fsGroup makes the claim writable by the runner
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["fsGroup"] == UID
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/tmp", folder}


def test_the_manifest_itself_sets_no_spool() -> None:
    """Without the overlay the runner has no spool (documented: such a report is held in memory only)."""
    container = next(c for c in runner_of(load_all(K8S / "runner.yaml"))["spec"]["template"]["spec"]["containers"]
                     if c["name"] == "runner")
    assert "PODTAX_RUNNER_SPOOL_DIR" not in {e["name"] for e in container.get("env", [])}
    assert "PODTAX_RUNNER_SPOOL_DIR" not in yaml.safe_dump(load_all(K8S / "kustomization.yaml"))
