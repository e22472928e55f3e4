"""Backends named by PODTAX_RUNNER_KUBECONFIG / PODTAX_RUNNER_NOMAD_ADDR: `podtax up` says what its runner
uses (summary and up.json; it printed "kubernetes off (no pod runs)" and wrote null), so `podtax volumes
cleanup` in another shell finds them; a cleanup that cannot reach a backend says so in one line naming
--kubeconfig / --nomad-addr, without the client's retry noise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from podtax import natsserver
from podtax.cli.main import main as cli

from tests.conftest import wait_until_up
from tests.controlplane.conftest import cluster
from tests.controlplane.test_cp_cleanup_up import CLAIM, VOLUME, leave_behind


def another_shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: Path, nomad_addr: str) -> None:
    """The environment of a shell that never set the runner's variables and has no ~/.kube/config."""
    for name in ("PODTAX_RUNNER_KUBECONFIG", "PODTAX_RUNNER_NOMAD_ADDR", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PODTAX_DATA_DIR", str(data))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NOMAD_ADDR", nomad_addr)


def test_up_records_the_backends_its_runner_uses(kubesim_factory: Any, nomadsim_factory: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capfd: pytest.CaptureFixture[str]) -> None:
    sim = kubesim_factory(cluster(provision=0.01, delete=0.01), kubelet="none")
    nomad = nomadsim_factory({})
    leave_behind(sim, nomad)
    data, ready = tmp_path / "data", tmp_path / "ready.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_")}
    # relative to up's directory: up.json must hold the path another shell can use
    env |= {"PODTAX_RUNNER_KUBECONFIG": Path(sim.kubeconfig).name, "PODTAX_RUNNER_NOMAD_ADDR": nomad.url}
    proc = subprocess.Popen([sys.executable, "-m", "podtax.cli.main", "up", "--data-dir", str(data),
                             "--api-port", str(natsserver.free_port()), "--node", "up-node", "--ready-file",
                             str(ready)], cwd=Path(sim.kubeconfig).parent, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_up(proc, ready)
        info = json.loads((data / "up.json").read_text())
        assert info["kubeconfig"] == str(Path(sim.kubeconfig).resolve()) and info["nomad_addr"] == nomad.url
        another_shell(monkeypatch, tmp_path, data, f"http://127.0.0.1:{natsserver.free_port()}")
        assert cli(["volumes", "cleanup", "--campaign", "old"]) == 0
        out, _ = capfd.readouterr()
        assert f"removed persistentvolumeclaim default/{CLAIM}" in out
        assert f"removed nomad volume default/{VOLUME}" in out
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert f"kubernetes {Path(sim.kubeconfig).resolve()} (PODTAX_RUNNER_KUBECONFIG)" in out, out
    assert f"nomad      {nomad.url} (PODTAX_RUNNER_NOMAD_ADDR)" in out and "kubernetes off" not in out, out


@pytest.mark.parametrize("options,lines", [
    # exit 1 for the Nomad PODTAX_RUNNER_NOMAD_ADDR names; no kubeconfig anywhere is said as such (not counted)
    ([], ["could not clean up kubernetes (~/.kube/config: the default, none configured): ConfigException: ",
          "could not clean up nomad ({dead}): ConnectError: "]),
    (["--backend", "nomad", "--nomad-addr", "{dead}"], ["could not clean up nomad ({dead}): ConnectError: "]),
])
def test_cleanup_that_reaches_no_backend_names_the_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capfd: pytest.CaptureFixture[str], options: list[str],
                                                           lines: list[str]) -> None:
    dead, missing = f"http://127.0.0.1:{natsserver.free_port()}", tmp_path / "gone.kubeconfig"
    (tmp_path / "data").mkdir()
    another_shell(monkeypatch, tmp_path, tmp_path / "data", dead)  # no podtax up there: no up.json
    monkeypatch.setenv("PODTAX_RUNNER_NOMAD_ADDR", dead)
    assert cli(["volumes", "cleanup", *[o.format(dead=dead, missing=missing) for o in options]]) == 1
    out, err = capfd.readouterr()
    said = err.strip().splitlines()
    assert len(said) == len(lines), err  # one line a backend: no retry warnings, no traceback
    fix = {"kubernetes": "; pass --kubeconfig FILE (or set PODTAX_RUNNER_KUBECONFIG)",
           "nomad": "; pass --nomad-addr URL (or set PODTAX_RUNNER_NOMAD_ADDR)"}
    for line, start in zip(said, lines, strict=True):
        assert line.startswith(start.format(dead=dead, missing=missing)), line
        assert line.endswith(fix["nomad" if "nomad" in start else "kubernetes"]), line


@pytest.mark.parametrize("options,said", [
    (["--backend", "kubernetes", "--kubeconfig", "{tmp}/gone.kubeconfig"],
     "--kubeconfig {tmp}/gone.kubeconfig: no such file"),
    (["--backend", "kubernetes", "--kubeconfig", "{tmp}"], "--kubeconfig {tmp}: is a folder"),
    (["--backend", "nomad", "--nomad-addr", "127.0.0.1:4646"], "--nomad-addr '127.0.0.1:4646' is not an http(s) URL"),
    (["--campaign", ""], "'' is not a campaign name"),
])
def test_cleanup_told_something_unusable_is_a_usage_mistake(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                            options: list[str], said: str) -> None:
    """A kubeconfig that is no file, an address that is no URL, a name no campaign has: one line and exit 2 before
    any backend is tried (the first two were exit 1, 'could not clean up ...: ConfigException' / UnsupportedProtocol;
    --campaign '' went on to clean up with an empty selector)."""
    assert cli(["volumes", "cleanup", *[o.format(tmp=tmp_path) for o in options]]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said.format(tmp=tmp_path) in err[0], err
