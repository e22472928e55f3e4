"""`podtax-kubesim --port` outside 0-65535 is one line and exit 2, not bind()'s OverflowError traceback."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_port_out_of_range(port: str, capfd: pytest.CaptureFixture[str]) -> None:
    from podtax_kubesim.__main__ import main

    assert main(["--port", port]) == 2
    assert capfd.readouterr().err.strip().splitlines() == [f"podtax-kubesim: --port must be 0-65535, got {port}"]
