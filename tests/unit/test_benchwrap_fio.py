"""The in-pod wrapper and fio (issue 12, item 11): a size beyond the scratch space is refused before
fio starts, with the reason; fio's data file is deleted after every run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from podtax import benchwrap, events
from podtax.derive import derive


def fio_args(tmp_path: Path, size: str, **extra: str) -> list[str]:
    opts = {"name": "podtax", "rw": "write", "bs": "4K", "size": size, "iodepth": "1", "direct": "0",
            "runtime": "1", "ioengine": "psync", "filename": str(tmp_path / "podtax-fio.dat"),
            "output-format": "json", **extra}
    return ["fio", *(f"--{k}={v}" for k, v in opts.items())]


def test_a_size_beyond_the_free_space_is_refused_before_fio_starts(tmp_path: Path,
                                                                    capfd: pytest.CaptureFixture[str]) -> None:
    assert benchwrap.main(fio_args(tmp_path, "9999999T")) == benchwrap.EXIT_NO_SPACE
    out, err = capfd.readouterr()
    assert "podtax-bench: refused: fio size 9999999T needs" in err and "lower size" in err
    assert "#podtax phase=after" in err and out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_filename_in_a_folder_not_made_yet_is_checked_on_its_file_system(tmp_path: Path) -> None:
    """fio makes a missing folder of --filename; the space check's statvfs of it was a traceback, exit 1 (hU, session
    56). Now the nearest folder there is measured: the refusal as above, through the console script."""
    bench = str(Path(sys.executable).with_name("podtax-bench"))
    args = fio_args(tmp_path / "not" / "yet", "9999999T")
    proc = subprocess.run([bench, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == benchwrap.EXIT_NO_SPACE and "Traceback" not in proc.stderr, proc.stderr
    assert "podtax-bench: refused: fio size 9999999T needs" in proc.stderr and f"but {tmp_path} has" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_data_file_is_deleted_after_success_and_failure(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert benchwrap.main(fio_args(tmp_path, "1M")) == 0
    assert '"jobs"' in capfd.readouterr().out
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "podtax-fio.dat").write_bytes(b"x" * 4096)  # left by an earlier run
    assert benchwrap.main(fio_args(tmp_path, "1M", bs="2M")) != 0  # bs above size: fio fails
    assert list(tmp_path.iterdir()) == []


LEFT_TO_FIO = [
    # the arguments (tmp: the test's folder, holding the file 'afile'), all left to the tool without a space check
    ["sysbench", "--size=9999999T", "--filename={tmp}/x"],  # other tools are left alone
    # a file where a folder should be: fio says so itself; the check measured the file's file system (fxU, session 56)
    ["fio", "--size=9999999T", "--filename={tmp}/afile/x/f"],
]


@pytest.mark.parametrize("args", LEFT_TO_FIO, ids=["other-tool", "file-as-folder"])
def test_what_is_no_fio_run_on_a_folder_is_left_to_the_tool(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    assert benchwrap.fio_space_problem([a.format(tmp=tmp_path) for a in args]) is None


def test_the_parser_reports_the_refusal_as_the_run_failure(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    benchwrap.main(fio_args(tmp_path, "9999999T"))
    out, err = capfd.readouterr()
    run = events.RunSpec(run_id="r", campaign="c", node="n", env="kubernetes", test="fio", params={"size": "9999999T"})
    now = events.now()
    outcome = derive(events.RawLog(run=run, stdout=out, stderr=err, exit_code=28, started_at=now, ended_at=now))
    assert isinstance(outcome, events.RunFailedV1) and outcome.data.reason == "insufficient-space"
    assert outcome.data.detail.startswith("fio size 9999999T needs")
