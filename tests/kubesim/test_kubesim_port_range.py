"""`podtax-kubesim --port` outside 0-65535 is one line and exit 2, not bind()'s OverflowError traceback."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_port_out_of_range(port: str, capfd: pytest.CaptureFixture[str]) -> None:
    from podtax_kubesim.__main__ import main

    assert main(["--port", port]) == 2
    assert capfd.readouterr().err.strip().splitlines() == [f"podtax-kubesim: --port must be 0-65535, got {port}"]


@pytest.mark.parametrize("args,says", [
    (["--cluster", "{tmp}/syntax.yaml"], "is not valid YAML (line 2)"),  # a YAML traceback before (audit)
    (["--cluster", "{tmp}/strings.yaml"], "'nodes' must be a list of mappings"),  # an AttributeError before
    (["--cluster", "{tmp}/long.yaml"], "long.yaml holds a number of more than 4,300 digits: no setting takes a "
                                       "number so long"),  # named sys.set_int_max_str_digits() (hU, session 54)
    (["--cluster", "{tmp}/date.yaml"], "date.yaml: month must be in 1..12 (YAML reads an unquoted value of this "
                                       "form as a date"),  # said 'a number of more than 4,300 digits' (r4, session 54)
    (["--cluster", "{tmp}/none.yaml"], "No such file"),
    (["--kubeconfig", "{tmp}"], "is not a file"),  # wrote the token to '<tmp>.tmp' before
    (["--kubeconfig", "{tmp}/no/such/folder.yaml"], "does not exist; create it first"),
    (["--kubeconfig", "/dev/null/k.yaml"], "the folder /dev/null is not a folder"),  # said "does not exist" (hF)
    (["--kubelet", "exec", "--host", "0.0.0.0", "--kubeconfig", "{tmp}/k.yaml"], "loopback only"),  # exit 1 before
])
def test_bad_files_are_one_line_and_exit_2(tmp_path, capfd, args: list[str], says: str) -> None:  # type: ignore[no-untyped-def]
    from podtax.cli.main import main as cli

    (tmp_path / "syntax.yaml").write_text("nodes: [a, b\n")
    (tmp_path / "strings.yaml").write_text("nodes: [a, b]\n")
    (tmp_path / "date.yaml").write_text("nodes:\n  - name: 2024-13-01\n")
    (tmp_path / "long.yaml").write_text("nodes:\n  - name: a\n    count: 1" + "0" * 5000 + "\n")
    assert cli(["kubesim", *(a.format(tmp=tmp_path) for a in args)]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and "Traceback" not in err
    assert not (tmp_path.parent / f"{tmp_path.name}.tmp").exists()


def test_no_isolation_without_the_exec_kubelet_is_one_line_and_exit_2(capfd: pytest.CaptureFixture[str]) -> None:
    """`podtax-kubesim --no-isolation` (an exec-mode option) with the simulated kubelet started kubesim and ignored it
    without a word, as --workdir and --pod-network are refused (sweep hF)."""
    from podtax_kubesim.__main__ import main

    assert main(["--no-isolation"]) == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        "podtax-kubesim: --no-isolation is for --kubelet exec (only its pods run as processes): add --kubelet exec "
        "or drop --no-isolation"]
