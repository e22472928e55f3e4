"""`shared/` (package podtax) is the contract every service depends on: it imports no service."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from podtax.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SERVICE_PACKAGES = ("podtax_analyzer", "podtax_runner", "podtax_scheduler", "podtax_parser", "podtax_host_agent",
                    "podtax_kubesim", "podtax_nomadsim")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_library_imports_no_service() -> None:
    offenders = []
    for path in sorted((ROOT / "shared" / "src").rglob("*.py")):
        for name in imported_modules(path):
            if name.split(".")[0] in SERVICE_PACKAGES:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_the_checker_sees_a_service_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from podtax_analyzer.flags import LEGEND\n")
    assert "podtax_analyzer.flags" in imported_modules(bad)


@pytest.mark.parametrize(("argv", "fragment"), [
    (["simulate", "--workload", "w.yaml"], "podtax simulate: missing option '--campaign'"),
    (["volumes", "cleanup", "--backend", "ceph"], "'ceph' is not one of kubernetes, nomad"),
    (["volumes"], "podtax volumes: missing command (one of: cleanup)"),
])
def test_delegated_commands_keep_one_line_usage_errors(argv: list[str], fragment: str,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0]
