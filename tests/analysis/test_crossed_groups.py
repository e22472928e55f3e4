"""Planted cells (pA, session 52; fx5 after review r3) whose sides each hold a second group of runs toward the other
side's level: two machines (an amd64 node and an arm64 node at 35% of its speed, say, reported under one node name)
mixed into one cell in different shares, 8 and 2 host runs, 2 and 8 pod runs. The median ratio then compares one
machine with the other (0.351 with no pod effect). stats/verdict.py's groups_cross compares the sides at each level
(pod group / host main runs, pod main runs / host group): a verdict stands only when both lie beyond the band and the
runs' spread the way the median ratio does, and its sentence gives that range, not the median ratio. Real DuckDB file,
compare_campaign."""

from __future__ import annotations

from analysis_synth import one_cell

NOISE = [1.0, 1.004, 0.996, 1.002, 0.998, 1.001, 0.999, 1.003]  # +-0.4%, 8 runs
WIDE = [1 + 5 * (x - 1) for x in NOISE]  # +-2%: a spread of 1.5% (1.4826 MAD / median)


def _withheld(con, host, pod, said, higher_is_better=True):
    """The cell gets no verdict and its sentence says `said`."""
    c = one_cell(con, host, pod, higher_is_better)
    assert c.verdict == "inconclusive", c.sentence
    assert said in c.sentence, c.sentence


def test_two_machines_mixed_in_other_shares_give_no_verdict(con):
    host = [1000 * x for x in NOISE] + [350.0, 351.5]  # 8 runs on the fast machine, 2 on the slow one
    pod = [1001.0, 998.5] + [350 * x for x in NOISE]  # 2 and 8: the same two levels, the other way round
    c = one_cell(con, host, pod)
    assert c.verdict == "inconclusive" and c.direction is None, c.sentence
    # what was found, not a cause (outlier runs, two machines or settings read alike); each level is the main runs'
    # median, in the groups' phrase as in the ratios'
    assert c.sentence.startswith("Inconclusive: the runs of each side lie in two groups, the smaller one toward the "
                                 "other side's main runs (2 of 10 host runs (350.0, 351.5 events/s) were 64.9% slower "
                                 "than the other 8 host runs' median of 1000 events/s and "), c.sentence
    assert "machine" not in c.sentence, c.sentence
    assert "pod/host is 0.999 at the host main runs' level (their median 1000 events/s) and 0.998 at the pod main " \
        "runs' level (their median 350.2 events/s)" in c.sentence, c.sentence
    assert c.ratio is not None and "OUTLIERS" in c.flags  # the figures stay


def test_a_small_difference_at_each_level_within_the_runs_spread_gives_no_verdict(con):
    # 2% slower at each level, beyond the 1% band but within the runs' +-2% (spread 1.5%): not claimed
    host = [1000 * x for x in WIDE] + [350.0, 351.5]
    pod = [980.0, 981.0] + [343 * x for x in WIDE]
    _withheld(con, host, pod, "pod/host is 0.978 at the host main runs' level (their median 1002 events/s) and 0.980 "
              "at the pod main runs' level (their median 343.9 events/s), not both beyond ±3.5%")


def test_a_group_of_two_runs_widens_the_margin(con):
    # 3% slower at each level, beyond the band and the runs' spread (1% + 1.5%) but each level's pod/host stands on
    # a group of 2 runs, whose median is as uncertain as the spread / sqrt(2): within 1% + 1.5% * (1 + 1/sqrt(2)) = 3.5%
    host = [1000 * x for x in WIDE] + [350.0, 351.5]
    pod = [970.0, 971.0] + [340 * x for x in WIDE]
    _withheld(con, host, pod, "pod/host is 0.968 at the host main runs' level (their median 1002 events/s) and 0.972 "
              "at the pod main runs' level (their median 340.8 events/s), not both beyond ±3.5% (the ±1.0% band and "
              "the runs' spread)")


def test_two_machines_with_a_pod_tax_give_the_range_of_the_levels(con):
    # the same mix, the pod 10% slower on each machine: slower, said at each level (the median ratio, 0.316, is not
    # the pod's effect)
    host = [1000 * x for x in NOISE] + [350.0, 351.5]
    pod = [900.0, 901.5] + [315 * x for x in NOISE]
    c = one_cell(con, host, pod)
    assert c.verdict == "slower", c.sentence
    # outlier runs and two machines read alike: the size is the span joining the 95% intervals of the ratio of
    # medians, of the main runs' ratio and of both levels (the far end: the ratio of medians' CI, 0.314 to 0.609)
    assert c.sentence.startswith("Pod slower than host: 9.4% to 68.6% (95% intervals joined: the ratio of medians "
                                 "0.316, 95% CI 0.314 to 0.609, p = 0.0006 after holm; if the groups are outlier runs, "
                                 "pod/host of the main runs 0.315 (95% CI 0.314 to 0.316); if two machines or "
                                 "settings, pod/host 0.900 (95% CI 0.895 to 0.906) at the host main runs' level (their "
                                 "median 1000 events/s) and 0.899 (95% CI 0.893 to 0.904) at the pod main runs' level "
                                 "(their median 315.2 events/s)): "), c.sentence
    assert "the other 8 host runs' median of 1000 events/s" in c.sentence, c.sentence  # the level, said one way
    # and the OUTLIERS flag's phrase says the same figures (not 'the host median of 999.5')
    assert "2 of 10 pod runs (900.0, 901.5 events/s) were 185.8% faster than the other 8 pod runs' median of 315.2 " \
           "events/s" in c.flag_details["OUTLIERS"], c.flag_details


def test_groups_part_way_toward_the_other_side_keep_the_verdict(con):
    # a 30% pod tax; 2 runs a side lie 60% of the way toward the other side's level (host 1000 -> 820, pod 700 ->
    # 880): at each level the pod is 12-15% slower, a verdict the median ratio (0.70) gives the same way
    host = [1000 * x for x in NOISE] + [820.0, 821.5]
    pod = [880.0, 881.5] + [700 * x for x in NOISE]
    c = one_cell(con, host, pod)
    assert c.verdict == "slower", c.sentence
    # the groups may be outlier runs, as planted: the planted 30% lies in the span the sentence gives
    # its ends are the intervals' (the main runs' 0.697 to 0.703 reaches 30.3%), not point estimates
    assert c.sentence.startswith("Pod slower than host: 11.4% to 30.3% (95% intervals joined: the ratio of medians "
                                 "0.701, 95% CI 0.699 to 0.792, p = 0.0006 after holm; if the groups are outlier runs, "
                                 "pod/host of the main runs 0.700 (95% CI 0.697 to 0.703); if two machines or "
                                 "settings, pod/host 0.880 (95% CI 0.875 to 0.886) at the host main runs' level (their "
                                 "median 1000 events/s) and 0.853 (95% CI 0.848 to 0.858) at the pod main runs' level"
                                 ), c.sentence
    low, high = (float(x.rstrip("%")) for x in c.sentence.split(": ")[1].split(" (")[0].split(" to "))
    assert low <= 30.0 <= high, c.sentence


def test_whole_number_latencies_that_tie_give_intervals_not_points(con):
    # latencies in whole ms: 7 of 8 host main runs at 10 ms and 6 of 8 pod ones at 34 ms (MAD 0), a host group of 28
    # and 29 ms, the pod 20% slower on each machine: each interval spans at least the value step (1 ms over sqrt(12))
    # with the groups' own scatter pooled in, not a point (it was '3.400 (95% CI 3.400 to 3.400)'), and holds the
    # planted 1.2 at each level
    host = [10, 10, 10, 10, 10, 11, 10, 10, 28, 29]
    pod = [12, 12, 34, 34, 34, 33, 34, 34, 35, 34]
    c = one_cell(con, host, pod, higher_is_better=False)
    assert c.verdict == "slower", c.sentence
    assert "pod/host of the main runs 3.400 (95% CI 3.272 to 3.533); if two machines or settings, pod/host 1.200 " \
           "(95% CI 1.129 to 1.275) at the host main runs' level (their median 10.00 ms) and 1.193 (95% CI 1.123 to " \
           "1.268) at the pod main runs' level" in c.sentence, c.sentence


def test_runs_that_all_tie_give_no_interval(con):
    # every main run ties and each group's 2 runs too: no spread to size an interval, said so, not a point
    host = [10] * 8 + [28, 28]
    pod = [12, 12] + [34] * 8
    c = one_cell(con, host, pod, higher_is_better=False)
    assert "pod/host of the main runs 3.400 (no interval); if two machines or settings, pod/host 1.200 (no interval) " \
           "at the host main runs' level" in c.sentence, c.sentence


def test_the_levels_against_the_median_ratio_give_no_verdict(con):
    # a duration: the pod is 10% faster on each machine, but the pod's larger share ran on the slow machine, so its
    # median is 2.6 times the host's: the median ratio's "slower" is withheld
    host = [100 * x for x in NOISE] + [285.0, 286.0]
    pod = [90.0, 90.5] + [257 * x for x in NOISE]
    _withheld(con, host, pod, "pod/host is 0.902 at the host main runs' level (their median 100.0 ms) and 0.901 at "
              "the pod main runs' level (their median 257.1 ms), the other way from the ratio of medians, 2.565",
              higher_is_better=False)


def test_slow_groups_on_both_sides_keep_the_verdict(con):
    # interference on both sides (2 runs of 14 at half speed), a real 10% pod tax: the groups lie the same way
    host = [1000 * x for x in NOISE + NOISE[:4]] + [500.0, 501.0]
    pod = [900 * x for x in NOISE + NOISE[:4]] + [450.0, 451.0]
    c = one_cell(con, host, pod)
    assert c.verdict == "slower" and "second group" in c.sentence, c.sentence
