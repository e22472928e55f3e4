"""`podtax volumes cleanup` without --backend when one backend it was pointed at cannot be reached: the line said so,
but the exit status was 0 as long as the other backend was cleaned, so a script could not tell that objects may be
left behind. Now it is 1; a backend nothing points at (no option, runner variable, `podtax up` or the client's own
setting) is still tried at its default and said, but not counted, so a Kubernetes-only site still gets 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from podtax import natsserver
from podtax.cli.main import main as cli

from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_cleanup_up import CLAIM, VOLUME, leave_behind
from tests.controlplane.test_cp_up_backends import another_shell


def dead_kubeconfig(live: Path, dead: str, to: Path) -> Path:
    """The kubeconfig `live` with its server moved where nothing listens."""
    doc = yaml.safe_load(live.read_text())
    for entry in doc["clusters"]:
        entry["cluster"]["server"] = dead
    to.write_text(yaml.safe_dump(doc))
    return to


@pytest.mark.parametrize("how", ["NOMAD_ADDR", "--nomad-addr", "KUBECONFIG", "PODTAX_RUNNER_KUBECONFIG"])
def test_a_backend_pointed_at_that_cannot_be_reached_fails_the_cleanup(kubesim_factory: Any, nomadsim_factory: Any,
                                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capfd: pytest.CaptureFixture[str],
                                                                       how: str) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    nomad = nomadsim_factory({})
    leave_behind(sim, nomad)
    dead = f"http://127.0.0.1:{natsserver.free_port()}"
    (tmp_path / "data").mkdir()
    another_shell(monkeypatch, tmp_path, tmp_path / "data", dead)  # NOMAD_ADDR names a dead Nomad, no ~/.kube/config
    if how in ("NOMAD_ADDR", "--nomad-addr"):  # Kubernetes cleaned, Nomad not reached
        args, broken = ["--kubeconfig", str(sim.kubeconfig)], "nomad"
        args += ["--nomad-addr", dead] if how == "--nomad-addr" else []
    else:  # Nomad cleaned, Kubernetes not reached
        monkeypatch.setenv(how, str(dead_kubeconfig(Path(sim.kubeconfig), dead, tmp_path / "dead.kubeconfig")))
        args, broken = ["--nomad-addr", nomad.url], "kubernetes"

    assert cli(["volumes", "cleanup", "--campaign", "old", *args]) == 1  # fails before: 0
    out, err = capfd.readouterr()
    said = err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(f"could not clean up {broken} ("), said  # one line a backend
    assert "none configured" not in said[0], said
    claims = [o["metadata"]["name"] for o in sim.objects("persistentvolumeclaims")]
    volumes = [v["ID"] for v in nomad.volumes()]
    if broken == "nomad":
        assert "kubernetes: removed 1 object(s)" in out and claims == [] and volumes == [VOLUME], out
    else:
        assert "nomad: removed 1 object(s)" in out and volumes == [] and claims == [CLAIM], out


def test_a_backend_nothing_points_at_is_said_but_not_a_failure(nomadsim_factory: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    """No --kubeconfig, PODTAX_RUNNER_KUBECONFIG, podtax up, KUBECONFIG or ~/.kube/config: a site without
    Kubernetes. Its line says where it looked and that nothing was configured; the Nomad it named was clean: 0."""
    nomad = nomadsim_factory({})
    (tmp_path / "data").mkdir()
    another_shell(monkeypatch, tmp_path, tmp_path / "data", nomad.url)
    assert cli(["volumes", "cleanup", "--campaign", "old"]) == 0
    out, err = capfd.readouterr()
    said = err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(
        "could not clean up kubernetes (~/.kube/config: the default, none configured): ConfigException: "), said
    assert "nomad: removed 0 object(s)" in out, out
