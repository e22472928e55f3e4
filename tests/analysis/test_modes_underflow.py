"""stats/modes._separation on a side whose within-mode spread underflows: [0, 0, 1e-170, 1, 1, 1] squares its low
mode's deviations to 0.0, so the pooled sd was 0 and gap / sd raised ZeroDivisionError. In the analyzer that error
put the runs back into pending and every later score publication raised again: no score was published at all.
Such a side now has no spread to compare its gap with, as two exact levels have none: no separated modes."""

from __future__ import annotations

import numpy as np
import pytest
from podtax_analyzer.stats.modes import check_unimodality, separated_modes


@pytest.mark.parametrize("tiny", [1e-170, 1e-300, 5e-324])
def test_a_spread_that_underflows_is_no_error(tiny: float) -> None:
    values = np.array([0.0, 0.0, tiny, 1.0, 1.0, 1.0])
    u = check_unimodality(values)
    assert u.n == 6
    assert separated_modes(np.sort(values)) is None
