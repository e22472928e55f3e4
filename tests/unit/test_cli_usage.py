"""Usage mistakes through the real `podtax` entry point: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from podtax.cli.main import main

PODTAX = str(Path(sys.executable).with_name("podtax"))

USAGE_ERRORS = [
    # argv, a fragment the one line must contain
    ([], "missing command"),
    (["--bogus"], "no such option: --bogus"),
    (["nosuch"], "no such command"),
    (["report"], "missing argument"),
    (["report", "demo", "--format", "x"], "no such option: --format"),
    (["results", "--limit", "zero"], "invalid value for '--limit'"),
    (["results", "--limit", "0"], "--limit"),
    (["campaign"], "missing command (one of:"),
    (["campaign", "submit"], "missing argument"),
    (["campaign", "submit", "a.yaml", "b.yaml"], "unexpected extra argument"),
    (["campaign", "status"], "missing argument"),
    (["parse"], "missing argument"),
    (["parse", ""], "a file name is empty"),
    (["import"], "missing argument"),
    (["kubesim", "--port", "notaport"], "invalid value for '--port'"),
    # a name no campaign can have is a usage mistake, not an unknown campaign asked of the analyzer
    (["report", ""], "'' is not a campaign name"),
    (["report", "demo", "--html", "x.html", "--compare", "Base"], "'Base' is not a campaign name"),
    (["export", "My_Campaign", "--xlsx", "x.xlsx"], "'My_Campaign' is not a campaign name"),
    (["compare", "a", "b c"], "'b c' is not a campaign name"),
    (["reparse", "--campaign", ""], "'' is not a campaign name"),  # an unset $C: "reparsed 0 logs" before
    (["results", "--campaign", "Quick"], "'Quick' is not a campaign name"),
    # the host agent's PODTAX_AGENT_NODE: it crash-looped under `podtax up` (a data dir that is a file stops a run
    # that got past the check)
    (["up", "--node", "", "--data-dir", "/dev/null"], "'' is not a node name"),
    (["up", "--node", "my node", "--data-dir", "/dev/null"], "'my node' is not a node name"),
    (["up", "--node", "vm\n", "--data-dir", "/dev/null"], "'vm\\n' is not a node name"),
    # it takes '_', which Kubernetes refuses: it said "as Kubernetes names its nodes" (sweep hU)
    (["up", "--node", "-vm", "--data-dir", "/dev/null"],
     "as `podtax up --node` takes them (Kubernetes itself takes no '_')"),
    (["scores", "--node", "vm_"], "'vm_' is not a node name (letters, digits and '-_.', starting and ending with "
                                  "a letter or digit, as `podtax up --node` takes them (Kubernetes itself takes no "
                                  "'_'))"),
    # the same names as filters: they were sent to the analyzer, and an empty one (an unset $N) got "no results yet"
    # or "no node scores yet" beside stored ones (audit hD)
    (["results", "--node", ""], "'' is not a node name"),
    (["scores", "--node", "my node"], "'my node' is not a node name"),
    (["scores", "--test", ""], "unknown test ''; registered templates: fio,"),
    (["scores", "--test", "sysbench-cpuu"], "(did you mean 'sysbench-cpu'?)"),
    (["scores", "--cluster", "a b"], "'a b' is not a cluster name"),
    # an empty --api (an unset $URL) asked PODTAX_API_URL's or the default analyzer without a word (sweep hF)
    (["report", "demo", "--api", ""], "invalid value for '--api': the URL is empty"),
    (["report", "demo", "--db", "x.duckdb", "--api", ""], "invalid value for '--api': the URL is empty"),
    (["compare", "a", "b", "--api", " "], "invalid value for '--api': the URL is empty"),
    (["export", "demo", "--csv", "out", "--api", ""], "invalid value for '--api': the URL is empty"),
]

# a campaign against itself: the analyzer's comparison raised (a 500) instead of saying what to fix
ITSELF = [
    (["compare", "demo", "demo"], "BASE and NEW are both 'demo': name two different campaigns"),
    (["report", "demo", "--html", "x.html", "--compare", "demo"], "--compare demo names the report's own campaign"),
]


def run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PODTAX, *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PODTAX_API_URL": "http://127.0.0.1:9", **env})


@pytest.mark.parametrize(("argv", "fragment"), USAGE_ERRORS, ids=[" ".join(a) or "(none)" for a, _ in USAGE_ERRORS])
def test_usage_error_is_one_line_and_exit_2(argv: list[str], fragment: str) -> None:
    proc = run(argv)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert fragment in lines[0]
    assert "--help" in lines[0]  # says where to read more


@pytest.mark.parametrize(("argv", "fragment"), ITSELF, ids=[" ".join(a) for a, _ in ITSELF])
def test_a_campaign_compared_with_itself_is_one_line_and_exit_2(argv: list[str], fragment: str) -> None:
    proc = run(argv)  # PODTAX_API_URL is a closed port: refused before any analyzer is asked
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"error: {fragment}" + proc.stderr.split(fragment, 1)[1].rstrip()]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_version() -> None:
    proc = run(["--version"])
    assert proc.returncode == 0
    assert proc.stdout.startswith("podtax ") and proc.stdout.split()[1][0].isdigit()


def test_help_is_not_an_error() -> None:
    proc = run(["--help"])
    assert proc.returncode == 0 and "campaign" in proc.stdout and not proc.stderr


def test_parse_says_its_exit_statuses(tmp_path: Path) -> None:
    """`podtax parse` exits 1 when a log is rejected; its --help did not say so (compare's and status's do)."""
    proc = run(["parse", "--help"], COLUMNS="200")
    assert proc.returncode == 0 and "Exit status: 0 when every log parsed; 1 when any was rejected" in proc.stdout
    (tmp_path / "empty.log").write_text("")
    assert run(["parse", str(tmp_path / "empty.log")]).returncode == 1


def test_unreachable_api_is_one_clear_line_and_exit_1() -> None:
    proc = run(["results", "--json"])
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the analyzer" in lines[0] and "PODTAX_API_URL" in lines[0]
    assert "Traceback" not in proc.stderr


def test_unreachable_nats_is_reported_once_without_empty_parens(tmp_path: Path) -> None:
    campaign = Path(__file__).parents[2] / "examples" / "campaigns" / "quick.yaml"
    proc = run(["campaign", "submit", str(campaign)], PODTAX_NATS_URL="nats://127.0.0.1:9",
               PODTAX_DATA_DIR=str(tmp_path))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "()" not in proc.stderr
    assert proc.stderr.count("Connect call failed") <= 1, proc.stderr
    assert "cannot reach NATS at nats://127.0.0.1:9" in proc.stderr


def test_matrix_error_points_at_the_matrix_line_without_pydantic_noise(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nnodes: [n1]\ntests:\n  - test: sysbench-cpu\n    params: {max_prime: 20000}\n"
                   "    matrix:\n      threads: [1, 5000]\n")
    proc = run(["campaign", "submit", "--dry-run", str(bad)])
    assert proc.returncode == 2, proc.stderr
    assert f"{bad}:7: tests.0.matrix.threads: threads must be between 1 and 1024" in proc.stderr
    assert "Value error" not in proc.stderr


@pytest.mark.parametrize("what", ["missing", "folder", "empty", "other", "device"])
def test_report_db_that_is_no_database_file_is_a_usage_error(what: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`report --db` naming no file, a folder, an empty file or another kind of file: exit 2 and one line, as
    `podtax simulate --db` (before, each went on with exit 1; an empty file reached DuckDB; another file got
    DuckDB's error and advice about a running analyzer holding it, exit 1: audit hD). A device (/dev/null) was
    said to be "no such file" (sweep hF)."""
    db = Path(os.devnull) if what == "device" else tmp_path / "podtax.duckdb"
    if what == "folder":
        db.mkdir()
    elif what == "empty":
        db.touch()
    elif what == "other":
        db.write_bytes(b"file,node\n" * 10)
    assert main(["report", "demo", "--db", str(db)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0]
    assert {"missing": "no such file", "folder": "is a folder", "empty": "is empty",
            "other": "is not a DuckDB database file", "device": "is a device, FIFO or socket, not a regular file"
            }[what] in lines[0]
    assert what == "other" or "no database file" in lines[0]


@pytest.mark.parametrize("what", ["missing", "folder", "empty"])
def test_report_simulate_workload_that_is_no_file_is_a_usage_error(what: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`report --html --simulate W`: a workload that is no file is said at once, exit 2, before the analyzer renders
    the page (it was read only after, and its error was exit 1; here the analyzer is not even reachable)."""
    workload = tmp_path / "wl.yaml"
    if what == "folder":
        workload.mkdir()
    elif what == "empty":
        workload.touch()
    argv = ["report", "demo", "--html", str(tmp_path / "r.html"), "--simulate", str(workload),
            "--api", "http://127.0.0.1:9"]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"--simulate {workload}" in lines[0]
    assert {"missing": "no such file", "folder": "is a folder", "empty": "is empty"}[what] in lines[0]
