"""`podtax report NEW --compare BASE` without --html printed the plain report: the comparison the user asked
for was dropped without a word (--compare only adds a section to the HTML report). Now it is a usage mistake,
one line naming `podtax compare`, exit 2, checked before any analyzer is asked."""

from __future__ import annotations

import pytest
from podtax.cli.main import main


def test_compare_without_html_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # an address nothing answers on: reaching it would fail with 1, not 2
    assert main(["report", "after", "--compare", "before", "--api", "http://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--compare" in err[0] and "--html" in err[0] and "podtax compare before after" in err[0]
