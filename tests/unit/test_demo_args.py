"""`python -m podtax.demo --help` ran the whole demo (it emptied $PODTAX_DEMO_DIR, then started `podtax up` and
a campaign), and any other argument did the same. Now --help prints the usage and a mistake is one line, exit 2,
both before anything starts or the demo's folder is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from podtax import demo


def demo_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A demo folder holding a file the demo would delete, and a demo that must not start. The environment the
    demo sets (PODTAX_DATA_DIR for its commands) is put back afterwards: it leaked into every later test."""
    (tmp_path / "keep").write_text("x")
    monkeypatch.setenv("PODTAX_DEMO_DIR", str(tmp_path))
    for name in ("PODTAX_DATA_DIR", "PODTAX_NATS_URL", "PODTAX_API_URL", "PODTAX_RUNNER_KUBECONFIG",
                 "PODTAX_RUNNER_NOMAD_ADDR"):  # each one demo.main or its start_up sets or removes
        monkeypatch.setenv(name, "")  # recorded as unset or as its value, so the teardown puts back either
        monkeypatch.delenv(name)

    def must_not_start(*_args: object) -> None:
        raise AssertionError("the demo started")

    monkeypatch.setattr(demo, "start_up", must_not_start)
    monkeypatch.setattr(demo, "control_plane", must_not_start)
    return tmp_path


@pytest.fixture
def demo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return demo_folder(tmp_path, monkeypatch)


def test_help_prints_usage(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m podtax.demo [--control-plane-only]")
    assert "PODTAX_DEMO_DIR" in out
    assert (demo_dir / "keep").exists()


def test_unknown_argument_is_one_line_exit_2(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown argument '--quick'" in err
    assert (demo_dir / "keep").exists()


def test_a_folder_holding_other_files_is_not_emptied(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PODTAX_DEMO_DIR naming a folder with files the demo did not make ($HOME, a project): the demo removed it
    whole before starting (shutil.rmtree). Now one line naming it, exit 2, the files kept (audit hD)."""
    assert demo.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds files the demo did not make" in err and str(demo_dir) in err
    assert (demo_dir / "keep").exists()


def test_an_earlier_demo_folder_is_emptied(demo_dir: Path) -> None:
    """The demo's own folder (its marker) is emptied and used again, as before."""
    (demo_dir / demo.MARKER).touch()
    with pytest.raises(AssertionError, match="the demo started"):
        demo.main(["--control-plane-only"])
    assert not (demo_dir / "keep").exists() and (demo_dir / demo.MARKER).exists()


def test_a_folder_holding_a_copy_of_the_demos_campaign_is_not_emptied(demo_dir: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding a demo*-campaign.yaml was taken for an earlier demo's and removed whole: a user who copied
    the demo's campaign file into a project folder to edit it lost the folder. Only the marker counts now."""
    (demo_dir / "demo-campaign.yaml").write_text("name: demo\n")
    assert demo.main([]) == 2
    assert "holds files the demo did not make" in capsys.readouterr().err
    assert (demo_dir / "keep").exists() and (demo_dir / "demo-campaign.yaml").exists()


def test_the_demo_tests_leave_the_environment_as_they_found_it(tmp_path: Path) -> None:
    """demo.main sets PODTAX_DATA_DIR before it starts anything; the fixture did not put it back, so every later
    test (and each subprocess it started) ran with the removed tmp folder as its data folder."""
    before = dict(os.environ)
    with pytest.MonkeyPatch.context() as monkeypatch:
        folder = demo_folder(tmp_path, monkeypatch)
        (folder / demo.MARKER).touch()
        with pytest.raises(AssertionError, match="the demo started"):
            demo.main(["--control-plane-only"])
        assert os.environ.get("PODTAX_DATA_DIR") == str(folder)  # what the demo's commands read
    assert dict(os.environ) == before
