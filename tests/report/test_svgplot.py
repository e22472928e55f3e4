"""The report's SVG helpers: pure functions, table-driven."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from podtax_analyzer.svgplot import MAX_POINTS, heat_colour, strip_plot, thin, time_plot


@pytest.mark.parametrize(("n", "limit", "want"), [(0, 5, 0), (3, 5, 3), (5, 5, 5), (1000, 5, 5), (401, 400, 400)])
def test_thin_keeps_ends_and_count(n, limit, want):
    out = thin(list(range(n)), limit)
    assert len(out) == want
    if n:
        assert out[0] == 0 and out[-1] == n - 1 and out == sorted(set(out))


@pytest.mark.parametrize(("ratio", "hib", "expect"), [
    (None, True, "#e0e0e0"), (1.0, True, "#ffffff"), (1.0, False, "#ffffff"),
    (1.2, True, "blue"), (1.2, False, "red"), (0.8, True, "red"), (0.8, False, "blue")])
def test_heat_colour_direction(ratio, hib, expect):
    c = heat_colour(ratio, hib)
    if expect.startswith("#"):
        assert c == expect
    else:
        r, b = int(c[1:3], 16), int(c[5:7], 16)
        assert (b > r) == (expect == "blue")


def test_strip_plot_marks_every_run_or_says_it_thinned():
    small = strip_plot([("host", [1.0, 2.0, 3.0]), ("pod", [2.0, 2.5])], "s")
    sides = small.split('<g class="side-')
    assert sides[1].count('class="pt"') == 3 and sides[2].count('class="pt"') == 2
    assert "median 2.000" in small and "median 2.250" in small and "quantiles shown" not in small
    big = strip_plot([("host", [float(i) for i in range(1000)])], "s")
    assert big.count('class="pt"') == MAX_POINTS and f"{MAX_POINTS} quantiles shown" in big


def test_time_plot_orders_by_start():
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    svg = time_plot([("host", [(t0, 1.0), (t0 + timedelta(seconds=60), 2.0)]), ("pod", [(t0, 1.5)])], "s")
    sides = svg.split('<g class="side-')
    assert sides[1].count('class="tp"') == 2 and sides[2].count('class="tp"') == 1 and "+60.00 s" in svg
    assert time_plot([], "s") == "" and strip_plot([], "s") == ""
