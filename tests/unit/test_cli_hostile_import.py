"""Damaged import manifests through `podtax import` (the real entry point): every bad line named, exit 2,
nothing published, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.cli import importer
from podtax.cli.main import main

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
HEADER = "file,node,env,test,params,started_at,tool_version\n"
ROW = "cpu.log,n1,host,sysbench-cpu,threads=1 max_prime=100000 events=200 time=0,2024-03-01T10:00:00,\n"

MANIFESTS = [  # id, manifest text, fragment of the first error line
    ("csv field over the csv module's limit", HEADER + ROW.replace("threads=1", '"threads=1 ' + "x" * 200_000),
     "line 2: field larger than field limit (131072): is a quote (\") left open?"),
    ("NUL in a file name", HEADER + ROW.replace("cpu.log", "cpu\x00.log"),
     "line 2: file 'cpu\\x00.log' holds a NUL character"),
    ("start in year 9999 (its end overflowed)", HEADER + ROW.replace("2024-03-01T10:00:00", "9999-12-31T23:59:59"),
     "line 2: started_at '9999-12-31T23:59:59' is before 2000 or in the future"),
    ("start in year 1", HEADER + ROW.replace("2024-03-01T10:00:00", "0001-01-01T00:00:00+01:00"),
     "line 2: started_at '0001-01-01T00:00:00+01:00' is before 2000"),
    # helper hU, session 54: the last value was taken without a word; int() named sys.set_int_max_str_digits()
    ("a parameter given twice", HEADER + ROW.replace("threads=1", "threads=4 threads=1"),
     "line 2: params: threads is given twice (threads=4 and threads=1): keep one"),
    ("a thread count of 5,001 digits", HEADER + ROW.replace("threads=1", "threads=1" + "0" * 5000),
     "line 2: params: sysbench-cpu: threads.int: Unable to parse input string as an integer, exceeded maximum size"),
    ("a superscript digit", HEADER + ROW.replace("threads=1", "threads=\u00b2"),
     "line 2: params: sysbench-cpu: threads.int: Input should be a valid integer, unable to parse string as an "
     "integer"),
    # fx4, session 54 (review r4 of bf61e880): refused on purpose, each with a line naming the fix
    ("the same parameter and value twice", HEADER + ROW.replace("threads=1", "threads=4 threads=4"),
     "line 2: params: threads is given twice (threads=4 and threads=4): keep one"),
    ("an Arabic-Indic digit", HEADER + ROW.replace("threads=1", "threads=\u0664"),  # int() read it as 4 before
     "line 2: params: sysbench-cpu: threads.int: Input should be a valid integer, unable to parse string as an "
     "integer"),
]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cpu.log").write_bytes((CORPUS / "debian12-x86_64" / "sysbench-cpu-prime100000-1t.log").read_bytes())
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:9")  # a manifest that passed would fail here
    monkeypatch.setenv("PODTAX_CLI_TIMEOUT", "2")
    return tmp_path


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "import"])
@pytest.mark.parametrize(("text", "fragment"), [m[1:] for m in MANIFESTS], ids=[m[0] for m in MANIFESTS])
def test_a_damaged_manifest_names_the_line(text: str, fragment: str, dry_run: bool, folder: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "m.csv").write_text(text)
    assert main(["import", "--campaign", "imp", str(folder / "m.csv"), *(["--dry-run"] if dry_run else [])]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert fragment in err.splitlines()[0], err
    assert err.strip().endswith("nothing was imported")


def test_a_folder_named_as_the_manifest_is_one_clear_line(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "--dry-run", "--campaign", "imp", str(folder)]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert f"cannot read {folder}: {folder} is not a regular file" in first and "Errno" not in first


def test_every_row_wrong_prints_a_bounded_list(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "m.csv").write_text(HEADER + ROW.replace("n1", "bad node") * 1000)
    assert main(["import", "--dry-run", "--campaign", "imp", str(folder / "m.csv")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == importer.MAX_SHOWN + 1
    assert lines[-1] == f"1000 problem(s) (the first {importer.MAX_SHOWN} shown); nothing was imported"


def test_a_log_reporting_a_run_of_centuries_is_a_line_not_a_traceback(folder: Path) -> None:
    log = (folder / "cpu.log").read_text()
    before = log.split("total time:")[1].split("s")[0]
    log = log.replace(f"total time:{before}s", "total time:" + " " * 27 + "9e15s")
    # as many events as 183.01 a second over that time: the parser refuses a rate its count and time deny
    (folder / "cpu.log").write_text(log.replace("total number of events:              200",
                                                f"total number of events:              {round(183.01 * 9e15)}"))
    (folder / "m.csv").write_text(HEADER + ROW)
    rows = importer.read_manifest(folder / "m.csv")
    assert importer.run_seconds("sysbench-cpu", (folder / "cpu.log").read_text(), rows[0].params) == 9e15
    with pytest.raises(importer.ManifestError, match=r"line 2: cpu.log reports a run of 9e\+15 s from"):
        importer.build_event(rows[0], "imp", 0)
