"""The caveats the phase table prints beside a user's own numbers state what to know, never a figure
measured elsewhere (which the user's numbers may contradict)."""

from __future__ import annotations

import re

import pytest
from podtax import phases as ph


@pytest.mark.parametrize("key", sorted(ph.CAVEATS))
def test_a_caveat_quotes_no_measured_figure(key):
    caveat = ph.CAVEATS[key]
    assert not re.search(r"\d", caveat), f"{key}: {caveat}"


def test_the_provisioned_caveat_still_says_what_concurrency_bounds():
    caveat = ph.CAVEATS[("volume-churn", "provisioned")]
    assert "Nomad" in caveat and "at most `concurrency`" in caveat and "at that concurrency" in caveat
