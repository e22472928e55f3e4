"""A NUL character in an argument of a command run as a service package's own command (delegate.py): no process's
argument can carry one, and subprocess raised ValueError ('embedded null byte'), a traceback (review r5, L2)."""

from __future__ import annotations

import pytest
from podtax.cli.main import main

CASES = [
    (["volumes", "cleanup", "--kubeconfig", "a\0b"], "podtax volumes cleanup: invalid value for '--kubeconfig': "
                                                     "'a\\x00b' holds a NUL character"),
    (["volumes", "cleanup", "--backend", "nomad", "--nomad-addr", "http://a\0b"],
     "podtax volumes cleanup: invalid value for '--nomad-addr': 'http://a\\x00b' holds a NUL character"),
    (["simulate", "--campaign", "c", "--workload", "w\0.yaml"],
     "podtax simulate: invalid value for '--workload': 'w\\x00.yaml' holds a NUL character"),
    (["simulate", "--workload=w\0.yaml"], "podtax simulate: '--workload=w\\x00.yaml' holds a NUL character"),
]


@pytest.mark.parametrize(("argv", "said"), CASES, ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in enumerate(CASES)])
def test_a_nul_in_a_delegated_argument_is_one_line(argv: list[str], said: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(said), lines
    assert lines[0].endswith("which no argument of a command can carry: give it without it. Try '"
                             + said.split(":")[0] + " --help'."), lines
