"""A service given an argument it does not take (`podtax-parser --nats nats://...`, a mistyped `--hlep`) started
anyway with the default settings (NATS at 127.0.0.1:4222) and said nothing of it. Now it is one line naming
the argument and `--help`, exit 2, before any setting is read or NATS is dialled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("module", ["podtax_parser", "podtax_analyzer", "podtax_runner", "podtax_host_agent"])
def test_unknown_argument_is_one_line_exit_2(module: str) -> None:
    # NATS on a port nothing listens on: a service that started anyway would fail with 3, not 2
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", module, "--nats-url", "nats://x"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "unexpected argument '--nats-url'" in done.stderr
    assert "--help" in done.stderr


@pytest.mark.parametrize("argv", [["podtax_scheduler"], ["podtax_kubesim"], ["podtax_nomadsim"],
                                  ["podtax_analyzer", "report", "c", "--db", "x"]])
def test_an_argparse_entry_point_says_a_mistake_in_one_line(argv: list[str]) -> None:
    """The entry points that take arguments: argparse printed its usage block first (podtax-kubesim: 7 lines)."""
    done = subprocess.run([sys.executable, "-m", *argv, "--bogus"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "unrecognized arguments: --bogus" in done.stderr
    assert "--help" in done.stderr


def test_help_still_lists_the_variables() -> None:
    done = subprocess.run([sys.executable, "-m", "podtax_parser", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "PODTAX_PARSER_BATCH" in done.stdout


@pytest.mark.parametrize(("module", "variables", "named"), [
    ("podtax_parser", {"PODTAX_NATS_TLS_CA": "ca.pem"}, "PODTAX_NATS_TLS_CA"),
    ("podtax_parser", {"PODTAX_NATS_TLS_CERT": "ca.pem", "PODTAX_NATS_TLS_KEY": "ca.pem"}, "PODTAX_NATS_TLS_CERT"),
    ("podtax_runner", {"PODTAX_RUNNER_NOMAD_CACERT": "ca.pem"}, "PODTAX_RUNNER_NOMAD_CACERT"),
    ("podtax_runner", {"PODTAX_RUNNER_NOMAD_CACERT": "missing.pem"}, "PODTAX_RUNNER_NOMAD_CACERT"),
    ("podtax_runner", {"PODTAX_RUNNER_NOMAD_CLIENT_CERT": "ca.pem", "PODTAX_RUNNER_NOMAD_CLIENT_KEY": "ca.pem"},
     "PODTAX_RUNNER_NOMAD_CLIENT_CERT"),
    ("podtax_runner", {"PODTAX_RUNNER_NAMESPACE": "Bad_NS"}, "PODTAX_RUNNER_NAMESPACE"),
])
def test_a_file_or_name_that_fails_later_is_named_at_start(tmp_path: Path, module: str, variables: dict[str, str],
                                                            named: str) -> None:
    """A TLS file that exists but holds no PEM certificate ended podtax-parser in a 34-line ssl.SSLError traceback
    at its first connect; the runner's Nomad TLS files (even missing ones) and a namespace Kubernetes refuses
    started it, to fail each volume-churn run or pod run. Now one line naming the setting, exit 2, before NATS
    is dialled (nothing listens there: a service that started would fail with 3)."""
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin",
           **{k: v if k.endswith("NAMESPACE") else str(tmp_path / v) for k, v in variables.items()}}
    done = subprocess.run([sys.executable, "-m", module], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    prog = module.replace("_", "-")
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"{prog}: {named}"), done.stderr


@pytest.mark.parametrize(("variable", "value", "named"), [
    ("PODTAX_SCHEDULER_PROFILE", "profile.bin", "PODTAX_SCHEDULER_PROFILE"),  # a traceback before
    ("PODTAX_SCHEDULER_NAMESPACES", "podtax,Bad NS", "PODTAX_SCHEDULER_NAMESPACES"),
    ("PODTAX_SCHEDULER_LEASE_NAMESPACE", "Bad_NS", "PODTAX_SCHEDULER_LEASE_NAMESPACE"),
    ("PODTAX_SCHEDULER_NAME", "", "PODTAX_SCHEDULER_NAME"),
])
def test_a_scheduler_setting_it_cannot_use_is_named_at_start(tmp_path: Path, variable: str, value: str,
                                                              named: str) -> None:
    """A binary profile ended podtax-scheduler in a UnicodeDecodeError traceback; namespaces Kubernetes refuses
    and an empty schedulerName were accepted, and failed later (every watch or lease call) or matched no pod
    (audit hD). Each is one line naming the setting, exit 2, before any kubeconfig is read."""
    (tmp_path / "profile.bin").write_bytes(bytes(range(128, 256)))
    env = {"PODTAX_NATS_URL": "nats://127.0.0.1:1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           variable: str(tmp_path / value) if value.endswith(".bin") else value}
    done = subprocess.run([sys.executable, "-m", "podtax_scheduler"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and named in done.stderr and "kubeconfig" not in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["podtax_kubesim", "podtax_nomadsim"])
def test_an_emulator_port_out_of_range_is_one_line(module: str, tmp_path: Path) -> None:
    """podtax-nomadsim --port -1 ended in an OverflowError traceback from its server's bind (audit hD);
    podtax-kubesim already said it in one line. Both: one line, exit 2."""
    done = subprocess.run([sys.executable, "-m", module, "--port", "-1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--port must be 0-65535, got -1" in done.stderr, done.stderr


def test_a_kubesim_workdir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    """podtax-kubesim --kubelet exec --workdir FILE started, and every pod it ran then failed (audit hD)."""
    (tmp_path / "afile").write_text("x")
    done = subprocess.run([sys.executable, "-m", "podtax_kubesim", "--kubelet", "exec", "--workdir", "afile",
                           "--kubeconfig", "k.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "--workdir afile exists and is not a folder" in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["podtax_kubesim", "podtax_nomadsim"])
def test_an_emulator_cluster_file_that_is_missing_names_the_fix(module: str, tmp_path: Path) -> None:
    """--cluster naming no file said "--cluster: [Errno 2] No such file or directory: 'gone.yaml'" (audit hD)."""
    done = subprocess.run([sys.executable, "-m", module, "--cluster", "gone.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Errno" not in done.stderr, done.stderr
    assert "--cluster gone.yaml: No such file or directory; give a cluster file" in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["podtax_kubesim", "podtax_nomadsim"])
def test_an_emulator_port_in_use_names_the_option(module: str, tmp_path: Path) -> None:
    """A --port another program holds said '[Errno 98] Address already in use', exit 1 (audit hD): now one line
    naming --port, exit 2."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", module, "--port", str(port)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"--port {port}: 127.0.0.1:{port} is in use" in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["podtax_kubesim", "podtax_nomadsim"])
@pytest.mark.parametrize(("host", "says"), [
    ("no-such-host.invalid", "--host no-such-host.invalid: "),  # then the resolver's words, and the fix
    ("192.0.2.1", "--host 192.0.2.1 is not an address of this machine"),  # TEST-NET-1: never this machine's
])
def test_an_emulator_host_not_of_this_machine_names_the_option(module: str, host: str, says: str,
                                                                tmp_path: Path) -> None:
    """A --host that does not resolve said '[Errno -2] Name or service not known', exit 1 (review hR): now one line
    naming --host, exit 2, as an address not of this machine."""
    done = subprocess.run([sys.executable, "-m", module, "--host", host, "--port", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr and "Errno" not in done.stderr, done.stderr


@pytest.mark.parametrize("what", ["missing", "folder", "device", "other"])
def test_analyzer_report_db_that_is_no_database_file_is_a_usage_error(what: str, tmp_path: Path) -> None:
    """`podtax-analyzer report --db` naming no file, a folder, /dev/null or another kind of file gave DuckDB's words,
    exit 1, and advice about a running analyzer holding the file (podtax report --db checked first; this entry point
    did not: sweep hF). Now one line naming --db and why, exit 2, as podtax report --db."""
    db = {"missing": tmp_path / "gone.duckdb", "folder": tmp_path, "device": Path("/dev/null"),
          "other": tmp_path / "runs.csv"}[what]
    if what == "other":
        db.write_text("file,node\n" * 10)
    done = subprocess.run([sys.executable, "-m", "podtax_analyzer", "report", "demo", "--db", str(db)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"argument --db: {db} " in done.stderr and "--help" in done.stderr
    assert {"missing": "no such file", "folder": "is a folder", "device": "not a regular file",
            "other": "is not a DuckDB database file"}[what] in done.stderr
    assert "holds the file" not in done.stderr


def test_podtax_bench_help_is_not_a_mistake_and_no_argument_is_one_line() -> None:
    """`podtax-bench --help` printed its docstring on stderr and exited 2; with no argument, the same 14 lines."""
    bench = [sys.executable, "-m", "podtax.benchwrap"]
    done = subprocess.run([*bench, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "podtax-bench TOOL [ARGS...]" in done.stdout and not done.stderr
    done = subprocess.run(bench, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--help" in done.stderr, done.stderr


SERVICES = ["podtax_parser", "podtax_analyzer", "podtax_runner", "podtax_host_agent", "podtax.benchwrap"]


@pytest.mark.parametrize("module", SERVICES)
def test_help_to_a_reader_gone_is_said_nothing_of(module: str) -> None:
    """`podtax-host-agent --help | head -3` ended in a 13-line BrokenPipeError traceback, exit 1, once head had its
    lines (session 53). Now, as `podtax ... | head`: nothing on stderr, status 1 (the text was not all written)."""
    import os

    read, write = os.pipe()
    os.close(read)  # every write to the pipe now fails EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", module, "--help"], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (1, "")


@pytest.mark.parametrize("module", SERVICES)
def test_help_to_a_full_disk_is_one_line(module: str) -> None:
    """`podtax-parser --help > f` on a full disk (/dev/full) ended in an OSError traceback: now one line, status 1."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", module, "--help"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, check=False)
    prog = {"podtax.benchwrap": "podtax-bench"}.get(module, module.replace("_", "-"))
    assert (done.returncode, done.stderr) == (1, f"{prog}: cannot write its output: No space left on device\n")


@pytest.mark.parametrize("module", SERVICES)
def test_help_with_standard_output_closed_is_no_traceback(module: str) -> None:
    """`podtax-parser --help >&-` (standard output closed: sys.stdout is None) ended in an AttributeError traceback,
    exit 1, after 3d853667 (review r9); before it, and now, nothing is written and the status is 0, as print does."""
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", module, "--help"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
