"""Options that mean nothing in the combination given are a usage error, never silently dropped (audit hI):
one line naming what to do instead, exit 2, before anything is asked or started. Before, `report --seeds 5`
without --simulate, `report --json --html F` (no JSON) and the others below ran as if the option were not
there. Run through the real entry point; NATS and the analyzer point at a closed port, and `up` at a data
dir that is a file, so a command that went ahead would end with another line (and never start anything)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from podtax.cli.main import main

QUICK = str(Path(__file__).resolve().parents[2] / "examples" / "campaigns" / "quick.yaml")
CASES = [  # (argv, extra environment, what the one line must say)
    (["report", "c", "--seeds", "5"], {}, "--seeds is the simulation's: give --simulate WORKLOAD"),
    (["report", "c", "--json", "--html", "{tmp}/r.html"], {}, "--json prints the report and --html writes"),
    (["report", "c", "--all-metrics", "--html", "{tmp}/r.html"], {}, "--all-metrics is for the terminal"),
    (["report", "c", "--json", "--all-metrics"], {}, "--all-metrics is for the terminal report: --json always"),
    (["compare", "a", "b", "--json", "--all-metrics"], {}, "--all-metrics is for the terminal comparison: --json"),
    (["report", "c", "--db", "{tmp}/x.duckdb", "--api", "http://127.0.0.1:1"], {}, "--db reads the file"),
    (["campaign", "submit", QUICK, "--dry-run", "--follow"], {}, "--dry-run publishes nothing"),
    (["campaign", "status", "quick", "--timeout", "5"], {}, "--timeout bounds --follow: add --follow"),
    (["up", "--data-dir", "{tmp}/file", "--pod-network"], {}, "--pod-network needs --exec-kubelet"),
    (["up", "--data-dir", "{tmp}/file", "--exec-kubelet", "--no-kubesim"], {},
     "--exec-kubelet runs the emulator's pods and --no-kubesim starts no emulator"),
    (["up", "--data-dir", "{tmp}/file", "--exec-kubelet"], {"PODTAX_RUNNER_KUBECONFIG": "{tmp}/kc"},
     "--exec-kubelet runs the emulator's pods and PODTAX_RUNNER_KUBECONFIG names another cluster"),
    (["up", "--data-dir", "{tmp}/file", "--nomadsim"], {"PODTAX_RUNNER_NOMAD_ADDR": "http://127.0.0.1:1"},
     "--nomadsim starts a simulated Nomad and PODTAX_RUNNER_NOMAD_ADDR names another"),
    (["up", "--data-dir", "{tmp}/file", "--nats-port", "4999"], {"PODTAX_NATS_URL": "nats://127.0.0.1:1"},
     "--nats-port is the embedded nats-server's and PODTAX_NATS_URL names another server"),
    # 0 (a free port) is given too: it was taken for the option's default and dropped without a word
    (["up", "--data-dir", "{tmp}/file", "--nats-port", "0"], {"PODTAX_NATS_URL": "nats://127.0.0.1:1"},
     "--nats-port is the embedded nats-server's and PODTAX_NATS_URL names another server"),
    (["kubesim", "--workdir", "{tmp}/w", "--kubeconfig", "{tmp}"], {}, "--workdir is where the exec kubelet"),
    (["volumes", "cleanup", "--backend", "nomad", "--kubeconfig", "{tmp}/kc", "--nomad-addr", "http://127.0.0.1:1"],
     {}, "--kubeconfig is for the kubernetes backend, and --backend nomad cleans only nomad"),
    (["volumes", "cleanup", "--backend", "kubernetes", "--nomad-addr", "http://127.0.0.1:1", "--kubeconfig",
      "{tmp}/kc"], {}, "--nomad-addr is for the nomad backend, and --backend kubernetes cleans only kubernetes"),
]


@pytest.mark.parametrize(("argv", "env", "said"), CASES, ids=[f"{a[0]} {said.split()[0]}" for a, _, said in CASES])
def test_an_option_that_would_be_ignored_is_a_usage_error(argv: list[str], env: dict[str, str], said: str,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("a file where `up` wants its data dir\n")
    for name in [n for n in os.environ if n.startswith("PODTAX_")]:
        monkeypatch.delenv(name)
    for name, value in {"PODTAX_DATA_DIR": str(tmp_path), "PODTAX_API_URL": "http://127.0.0.1:1",
                        "PODTAX_NATS_URL": "nats://127.0.0.1:1", "PODTAX_CLI_TIMEOUT": "3", **env}.items():
        monkeypatch.setenv(name, value.replace("{tmp}", str(tmp_path)))
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out = capfd.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and said in lines[0], (code, out.err, out.out)
    assert "Traceback" not in out.err and not (tmp_path / "r.html").exists()


def test_a_dry_run_says_it_does_not_try_into_existing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    """--dry-run --into-existing previews the real import, so it is no mistake; but the dry run reads no NATS,
    so it says that the campaign --into-existing is about was not looked at (before: not a word)."""
    monkeypatch.setenv("PODTAX_NATS_URL", "nats://127.0.0.1:1")
    manifest = Path(__file__).resolve().parents[2] / "examples" / "import" / "manifest.csv"
    code = main(["import", str(manifest), "--campaign", "old", "--root", str(manifest.parents[2]), "--dry-run",
                 "--into-existing"])
    err = " ".join(capfd.readouterr().err.split())
    assert code == 0 and "--into-existing is not tried by --dry-run: whether podtax ran campaign 'old'" in err, err
