"""Hostile values in PODTAX_* settings and in each service's own command line, through the real entry points
(`python -m ...`): each is ONE line naming the variable or option and what to set, exit 2, before anything starts.
Before, an empty value was taken for the current folder or every address (PODTAX_AGENT_WORKDIR="",
PODTAX_ANALYZER_HOST="", `podtax-kubesim --kubelet exec --workdir ""`), infinite and huge numbers passed their
bounds and failed once running, and an empty --kubeconfig was silently ignored. NATS is on a port nothing listens
on: a service that got past its settings would exit 3 (the scheduler 1), not 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NATS_GONE = "nats://127.0.0.1:1"
ANY_SETTING = "is empty: unset it, or set a value"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"  # as the API server checks names


@pytest.mark.parametrize(("module", "variable", "value", "says"), [
    ("podtax_host_agent", "PODTAX_AGENT_WORKDIR", "", "is empty: unset it for the default /var/tmp/podtax, or set a "
                                                      "value (got '')"),
    ("podtax_host_agent", "PODTAX_AGENT_STATE_DIR", " ", f"{ANY_SETTING} (got ' ')"),
    ("podtax_host_agent", "PODTAX_AGENT_FACTS_INTERVAL_S", "inf", "Input should be a finite number (got 'inf')"),
    ("podtax_analyzer", "PODTAX_ANALYZER_HOST", "", "is empty: unset it for the default 127.0.0.1, or set a value "
                                                    "(got '')"),
    ("podtax_analyzer", "PODTAX_ANALYZER_WORKERS", "9" * 20, f"Input should be less than or equal to 1024 "
                                                             f"(got '{'9' * 20}')"),
    ("podtax_analyzer", "PODTAX_ANALYZER_MEMORY_MB", "9" * 20, f"Input should be less than or equal to 16777216 "
                                                               f"(got '{'9' * 20}')"),
    ("podtax_parser", "PODTAX_NATS_STREAM_MAX_AGE_S", "1e309", "Input should be a finite number (got '1e309')"),
    ("podtax_parser", "PODTAX_NATS_STREAM_MAX_BYTES", "9" * 20, f"Input should be less than or equal to "
                                                                f"9223372036854775807 (got '{'9' * 20}')"),
    ("podtax_parser", "PODTAX_NATS_CREDS", "", f"{ANY_SETTING} (got '')"),  # it said ". is not a readable file"
    ("podtax_parser", "PODTAX_NATS_CREDS", "/", "/ is not a readable file: point it at an existing file, or unset it"),
    ("podtax_parser", "PODTAX_HEALTH_HOST", " ", "is empty: unset it for the default 127.0.0.1, or set a value "
                                                 "(got ' ')"),
    ("podtax_runner", "PODTAX_RUNNER_KUBECONFIG", "", f"{ANY_SETTING} (got '')"),
    ("podtax_runner", "PODTAX_RUNNER_REPORT_GRACE_S", "inf", "Input should be a finite number (got 'inf')"),
    # empty is no token (as Nomad's CLI reads an empty NOMAD_TOKEN: test_config), blanks are no token either
    ("podtax_runner", "PODTAX_RUNNER_NOMAD_TOKEN", " ", "is blank: unset it or leave it empty for no token, or set the "
                                                       "token (got a hidden value)"),
    ("podtax_scheduler", "PODTAX_SCHEDULER_NAME", " ", "is empty: unset it for the default benchmark-scheduler, or "
                                                      "set a value (got ' ')"),
    ("podtax_scheduler", "PODTAX_SCHEDULER_LEASE_DURATION_S", "inf", "Input should be a finite number (got 'inf')"),
    ("podtax_scheduler", "PODTAX_SCHEDULER_PROFILE", "", f"{ANY_SETTING} (got '')"),
    # Kubernetes answered 422 at every lease call: the scheduler ran and never led, so never bound a pod
    *(("podtax_scheduler", "PODTAX_SCHEDULER_LEASE_NAME", name, f"String should match pattern '{DNS_SUBDOMAIN}' "
                                                                f"(got '{name}')") for name in ("Bad Lease", "a..b",
                                                                                                "a.-b", "a-.b")),
    ("podtax_scheduler", "PODTAX_SCHEDULER_LEASE_NAME", "a" * 254, f"String should have at most 253 characters "
                                                                   f"(got '{'a' * 254}')"),
])
def test_a_hostile_setting_stops_the_service_at_start_in_one_line(tmp_path: Path, module: str, variable: str,
                                                                  value: str, says: str) -> None:
    done = _run(tmp_path, [module], {variable: value})
    assert (done.returncode, done.stderr) == (2, f"{module.replace('_', '-')}: {variable}: {says}\n")


@pytest.mark.parametrize(("argv", "says"), [
    (["podtax_scheduler", "--kubeconfig", ""], "podtax-scheduler: argument --kubeconfig: {empty}. Try "
                                               "'podtax-scheduler --help'."),  # it was ignored
    (["podtax_scheduler", "--profile", ""], "podtax-scheduler: argument --profile: {empty}. Try "
                                            "'podtax-scheduler --help'."),
    (["podtax_analyzer", "report", "c", "--db", ""], "podtax-analyzer report: argument --db: {empty}. Try "
                                                     "'podtax-analyzer report --help'."),  # exit 1, DuckDB's words
    (["podtax_analyzer", "report", "c", "--db", "gone.duckdb", "--threshold", "nan"],
     "podtax-analyzer report: argument --threshold: nan is no practical threshold: give a fraction from 0 to below 1 "
     "(0.01 = 1%). Try 'podtax-analyzer report --help'."),
    (["podtax_runner.controlplane", "--test", "pod-startup", "--kubeconfig", ""],
     "python -m podtax_runner.controlplane: argument --kubeconfig: {empty}. Try 'python -m "
     "podtax_runner.controlplane --help'."),
    (["podtax_runner.controlplane", "--test", "pod-startup", "--kubeconfig", "gone.yaml"],  # exit 2, saying nothing
     "python -m podtax_runner.controlplane: argument --kubeconfig: gone.yaml is not a readable file: give an existing "
     "file. Try 'python -m podtax_runner.controlplane --help'."),
    (["podtax_scheduler", "--kubeconfig", "gone.yaml"], "podtax-scheduler: argument --kubeconfig: gone.yaml is not a "
                                                        "readable file: give an existing file. Try 'podtax-scheduler "
                                                        "--help'."),  # it named PODTAX_SCHEDULER_KUBECONFIG
    (["podtax_scheduler", "--profile", "gone.yaml"], "podtax-scheduler: argument --profile: gone.yaml is not a "
                                                     "readable file: give an existing file. Try 'podtax-scheduler "
                                                     "--help'."),  # it named PODTAX_SCHEDULER_PROFILE
    (["podtax_kubesim", "--cluster", ""], "podtax-kubesim: argument --cluster: {empty}. Try 'podtax-kubesim --help'."),
    (["podtax_kubesim", "--kubeconfig", ""], "podtax-kubesim: argument --kubeconfig: {empty}. Try "
                                             "'podtax-kubesim --help'."),
    (["podtax_kubesim", "--kubelet", "exec", "--workdir", ""], "podtax-kubesim: argument --workdir: {empty}. Try "
                                                               "'podtax-kubesim --help'."),  # it ran in this folder
    (["podtax_kubesim", "--token-file", ""], "podtax-kubesim: argument --token-file: {empty}. Try "
                                             "'podtax-kubesim --help'."),
    (["podtax_kubesim", "--token-file", "gone"], "podtax-kubesim: --token-file gone is not a readable file: give the "
                                                 "file holding the API token"),  # "[Errno 2] ...", exit 1
    (["podtax_kubesim", "--history", "0"], "podtax-kubesim: --history must be at least 1, got 0"),  # a traceback
    (["podtax_kubesim", "--host", ""], "podtax-kubesim: --host is empty: give an address to listen on (127.0.0.1: "
                                       "loopback)"),  # it listened on every address
    (["podtax_kubesim", "--kubelet", "exec", "--host", ""], "podtax-kubesim: --host is empty: give an address to "
                                                            "listen on (127.0.0.1: loopback)"),  # "not --host "
    (["podtax_nomadsim", "--cluster", ""], "podtax-nomadsim: argument --cluster: {empty}. Try "
                                           "'podtax-nomadsim --help'."),
    (["podtax_nomadsim", "--tls-dir", ""], "podtax-nomadsim: argument --tls-dir: {empty}. Try "
                                           "'podtax-nomadsim --help'."),
    (["podtax_nomadsim", "--tls-dir", "afile"], "podtax-nomadsim: --tls-dir afile exists and is not a folder: name a "
                                                "folder (it is made when missing)"),  # "[Errno 17] ...", exit 1
    (["podtax_nomadsim", "--acl-token", ""], "podtax-nomadsim: --acl-token is empty: give the token requests must "
                                             "carry, or leave the option out (ACLs off)"),  # ACLs were off
    (["podtax_nomadsim", "--host", " "], "podtax-nomadsim: --host is empty: give an address to listen on (127.0.0.1: "
                                         "loopback)"),
])
def test_a_command_line_mistake_is_one_line_before_anything_starts(tmp_path: Path, argv: list[str],
                                                                   says: str) -> None:
    done = _run(tmp_path, argv, {})
    empty = "the path is empty (an unset shell variable?): give a path"
    assert (done.returncode, done.stderr) == (2, says.format(empty=empty) + "\n")


@pytest.mark.parametrize(("argv", "variable", "says"), [
    (["podtax.cli.main", "results"], "PODTAX_DATA_DIR", "error: PODTAX_DATA_DIR is empty: set it to the --data-dir "
                                                        "of a podtax up, or unset it (default .podtax)"),
    (["podtax.demo"], "PODTAX_DEMO_DIR", "podtax.demo: PODTAX_DEMO_DIR is empty: name a new folder, or unset it "
                                         "(default .podtax/demo)"),
])
def test_an_empty_folder_variable_is_not_the_current_folder(tmp_path: Path, argv: list[str], variable: str,
                                                            says: str) -> None:
    """PODTAX_DATA_DIR="" made podtax read a podtax up's record in the current folder (and `podtax up` put its data
    there); PODTAX_DEMO_DIR="" made the demo empty the current folder when it held nothing else."""
    done = _run(tmp_path, argv, {variable: " "})
    assert (done.returncode, done.stderr) == (2, says + "\n")


def test_the_child_in_another_folder_imports_this_copy_of_podtax(tmp_path: Path) -> None:
    """A relative PYTHONPATH (a copy of the sources under test) was read from tmp_path by the children: they
    imported the installed podtax, not the copy under test (tests/conftest.py makes it absolute)."""
    import podtax

    done = subprocess.run([sys.executable, "-c", "import podtax; print(podtax.__file__)"], cwd=tmp_path,
                          env=_env(tmp_path, {}), capture_output=True, text=True, timeout=60)
    assert done.stdout == f"{podtax.__file__}\n"


def _env(tmp_path: Path, variables: dict[str, str]) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PODTAX_NATS_URL": NATS_GONE, "COLUMNS": "200",
            "PODTAX_AGENT_WORKDIR": str(tmp_path / "work"), **variables,
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}  # absolute: tests/conftest.py


def _run(tmp_path: Path, argv: list[str], variables: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "afile").write_text("x\n")
    return subprocess.run([sys.executable, "-m", *argv], cwd=tmp_path, env=_env(tmp_path, variables),
                          capture_output=True, text=True, timeout=60)
