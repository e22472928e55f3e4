"""A kubeconfig the kubernetes client cannot use (not YAML, a YAML list, no current-context) named to the
scheduler or the runner: the scheduler ended in the client's traceback (ConfigException, yaml's ParserError,
TypeError), exit 1, and so did the runner. Now each exits 2 with one line naming the file, the setting and why
(podtax.kubeclient.load_config). Real services as children, a real nats-server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax import natsserver

BAD = {"not-yaml": "garbage: [\n", "a-list": "- a\n- b\n",
       "no-context": "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"}


@pytest.fixture(scope="module")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> object:
    server = natsserver.start(tmp_path_factory.mktemp("js"))
    yield server.url
    server.stop()


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PODTAX_") and k != "KUBERNETES_SERVICE_HOST"}
    return subprocess.run([sys.executable, "-m", *args], env={**base, **env}, capture_output=True, text=True,
                          timeout=90)


def _one_line(done: subprocess.CompletedProcess[str], setting: str, path: Path) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert f"{setting}: cannot load Kubernetes access from {path} (" in last, last
    return last


@pytest.mark.parametrize("kind", sorted(BAD))
def test_the_scheduler_names_an_unusable_kubeconfig_in_one_line(kind: str, tmp_path: Path, nats_url: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(BAD[kind])
    done = _run(["podtax_scheduler", "--kubeconfig", str(path)],
                {"PODTAX_NATS_URL": nats_url, "HOME": str(tmp_path)})
    _one_line(done, "PODTAX_SCHEDULER_KUBECONFIG (or --kubeconfig)", path)


def test_the_scheduler_without_any_kubeconfig_says_where_it_looked(tmp_path: Path, nats_url: str) -> None:
    done = _run(["podtax_scheduler"], {"PODTAX_NATS_URL": nats_url, "HOME": str(tmp_path), "KUBECONFIG": ""})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "cannot load Kubernetes access from ~/.kube/config (the default)" in done.stderr.strip().splitlines()[-1]


def test_the_scheduler_names_the_files_kubeconfig_points_to(tmp_path: Path, nats_url: str) -> None:
    """With KUBECONFIG set (and no PODTAX_SCHEDULER_KUBECONFIG), the client read KUBECONFIG's files, but the
    error named ~/.kube/config."""
    bad, other = tmp_path / "bad", tmp_path / "other"
    bad.write_text(BAD["not-yaml"])
    done = _run(["podtax_scheduler"], {"PODTAX_NATS_URL": nats_url, "HOME": str(tmp_path),
                                       "KUBECONFIG": f"{bad}{os.pathsep}{other}"})
    last = _one_line(done, "PODTAX_SCHEDULER_KUBECONFIG (or --kubeconfig)", Path(f"{bad}, {other} (KUBECONFIG)"))
    assert "~/.kube/config" not in last and "fix or unset KUBECONFIG" in last, last


def test_the_runner_says_it_does_not_read_kubeconfig(tmp_path: Path, nats_url: str) -> None:
    """The runner reads PODTAX_RUNNER_KUBECONFIG, else in-cluster access, never KUBECONFIG: with KUBECONFIG set
    to a file and neither of those, it ended in 'no Kubernetes access (Service host/port is not set.)', exit 1,
    not naming the file the user had set."""
    bad = tmp_path / "bad"
    bad.write_text(BAD["not-yaml"])
    done = _run(["podtax_runner"], {"PODTAX_NATS_URL": nats_url, "HOME": str(tmp_path), "KUBECONFIG": str(bad)})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("podtax-runner: PODTAX_RUNNER_KUBECONFIG is unset"), last
    assert f"KUBECONFIG ({bad}) is not read by the runner" in last, last


@pytest.mark.parametrize("kind", sorted(BAD))
def test_the_runner_names_an_unusable_kubeconfig_in_one_line(kind: str, tmp_path: Path, nats_url: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(BAD[kind])
    done = _run(["podtax_runner"], {"PODTAX_NATS_URL": nats_url, "PODTAX_RUNNER_KUBECONFIG": str(path)})
    _one_line(done, "PODTAX_RUNNER_KUBECONFIG", path)


@pytest.mark.parametrize("args, env", [
    (["podtax_scheduler", "--kubeconfig", "no-such-file"], {}),
    (["podtax_parser"], {"PODTAX_NATS_URL": "http://not-nats"}),
])
def test_a_bad_setting_of_a_service_is_one_line(args: list[str], env: dict[str, str], tmp_path: Path) -> None:
    """A service printed 'invalid configuration:' and the problem on a second line (ConfigError's message)."""
    done = _run(args, {"PODTAX_NATS_URL": "nats://127.0.0.1:1", **env})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ("no-such-file" in done.stderr) == ("podtax_scheduler" in args), done.stderr


@pytest.mark.parametrize("kind", sorted(BAD))
def test_volumes_cleanup_names_an_unusable_kubeconfig_in_one_line(kind: str, tmp_path: Path) -> None:
    """`podtax volumes cleanup --kubeconfig FILE` with a file that is no kubeconfig said 'could not clean up
    kubernetes (FILE): TypeError: ...' and exit 1, as for a cluster that is down; it is the user's mistake, named
    as the runner names it (load_config): exit 2 (audit hD). Nomad is never tried: the line is the only one."""
    path = tmp_path / "kubeconfig"
    path.write_text(BAD[kind])
    done = _run(["podtax.cli.main", "volumes", "cleanup", "--kubeconfig", str(path)],
                {"HOME": str(tmp_path), "PODTAX_DATA_DIR": str(tmp_path / "none")})
    last = _one_line(done, "--kubeconfig", path)
    assert len(done.stderr.strip().splitlines()) == 1 and "point --kubeconfig at a working kubeconfig" in last
