"""`podtax import --help` (the real entry point) lists exactly the `test` and `env` values a manifest row may have:
it named five templates while iperf3, sockperf, volume-churn and pod-startup logs imported fine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from podtax import templates
from podtax.cli.main import main
from podtax.cli.manifest import ManifestError, read_manifest

HEADER = "file,node,env,test,params,started_at,tool_version\n"
TESTS = [*templates.REGISTRY, "nosuch"]
ENVS = ["host", "kubernetes", "nomad"]


def help_text(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["import", "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def said(text: str, test: str) -> tuple[bool, set[str]]:
    """(is `test` listed, the envs the help gives it: its own when named in the env clause, else the usual)."""
    listed = re.search(r"`test` a template name \(([^)]*)\)", text)
    assert listed, text
    usual = re.search(r"`env` is ([a-z]+(?: or [a-z]+)*)", text)
    assert usual, text
    own = re.search(rf"(?:\(|; ){re.escape(test)}: ([a-z]+(?: or [a-z]+)*)", text)
    return test in listed[1].split(", "), set((own or usual)[1].split(" or "))


def test_the_help_names_the_network_and_control_plane_templates(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text(monkeypatch, capsys)
    for test in ("iperf3", "sockperf", "volume-churn", "pod-startup"):
        assert said(text, test)[0], f"{test} is not listed: {text}"
    assert said(text, "volume-churn")[1] == {"kubernetes", "nomad"}
    assert said(text, "pod-startup")[1] == {"kubernetes"}


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("test", TESTS)
def test_the_help_says_what_the_manifest_check_accepts(test: str, env: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    listed, envs = said(help_text(monkeypatch, capsys), test)
    (tmp_path / "x.log").write_text("a log\n")  # the manifest check only stats the file
    (tmp_path / "m.csv").write_text(HEADER + f"x.log,n1,{env},{test},,2024-03-01T10:00:00Z,\n")
    try:
        read_manifest(tmp_path / "m.csv", None)
        accepted = True
    except ManifestError:
        accepted = False
    assert accepted == (listed and env in envs), f"{test} in {env}: accepted {accepted}, help says {listed} {envs}"
