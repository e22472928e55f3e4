"""Real stress-ng 0.15.06 captures (tests/corpus/debian12-x86_64, commands in COMMANDS.tsv): a `--yaml`
report with sections after `metrics:` whose rows look like metrics rows, and a `--metrics-brief` table
left empty by a stressor that did nothing."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

DEBIAN = CORPUS / "debian12-x86_64"


def test_a_perf_yaml_report_gives_the_figures_of_its_text_log() -> None:
    """--perf adds `perfstats:` with a `- stressor: cpu` row after `metrics:`; it was read as a second cpu
    row lacking bogo-ops and the good report refused as truncated."""
    text = parse_text(read_text(DEBIAN / "stress-ng-cpu-1-perf.log")).values()
    for tool in (None, "stress-ng", "stress-ng-cpu"):
        got = parse_text(read_text(DEBIAN / "stress-ng-cpu-1-perf.yaml"), tool)
        assert got.flags == () and got.tool_version == "0.15.06"
        yaml = got.values()
        assert set(text) <= set(yaml) and yaml["bogo_ops"] == 300
        for name, value in text.items():  # the table rounds to 2 decimals
            assert abs(value - yaml[name]) <= 0.0051, (name, value, yaml[name])


def test_rows_of_any_later_section_are_not_metrics() -> None:
    """`thermal-zones:` (--tz on a machine with thermal zones) has the same `- stressor:` rows as `perfstats:`."""
    report = read_text(DEBIAN / "stress-ng-cpu-1-perf.yaml")
    expected = parse_text(report).values()
    tz = report.replace("\nperfstats:\n", "\nthermal-zones:\n")
    assert tz != report and parse_text(tz).values() == expected
    twice = report.replace("\n...", "\n" + report[report.index("\nmetrics:"):report.index("\nperfstats:")] + "\n...")
    with pytest.raises(ParseFailure, match="several stress-ng YAML reports") as failure:  # two `metrics:` sections
        parse_text(twice)
    assert failure.value.reason == "unknown-format"


def test_a_whole_brief_run_without_rows_is_the_stressor_doing_nothing_not_a_cut_log() -> None:
    """--metrics-brief leaves out the row of a stressor that completed 0 bogo ops (af-alg here): the table is a
    header, then `successful run completed`. It was refused as `truncated` (a cut log); with --metrics the same
    run prints a row of 0 bogo ops, refused as `fatal`: both forms now say the same."""
    log = read_text(DEBIAN / "stress-ng-af-alg-brief-no-row.log")
    for tool in (None, "stress-ng"):
        with pytest.raises(ParseFailure, match="0 bogo ops") as failure:
            parse_text(log, tool)
        assert failure.value.reason == "fatal" and "--metrics" in failure.value.detail
    cut = log[:log.index("successful run completed")]  # killed after the header: still a cut log
    with pytest.raises(ParseFailure) as failure:
        parse_text(cut[:cut.rfind("\n") + 1])
    assert failure.value.reason == "truncated"


def test_the_yaml_of_a_whole_brief_run_without_rows_is_refused_as_its_table_is() -> None:
    with pytest.raises(ParseFailure, match="0 bogo ops") as failure:  # `metrics:` then `...`: was `truncated`
        parse_text(read_text(DEBIAN / "stress-ng-af-alg-brief-no-row.yaml"))
    assert failure.value.reason == "fatal"


def test_misc_metrics_of_several_instances_are_not_named_as_the_tables() -> None:
    """Two matrix instances: the table prints each miscellaneous metric's geometric mean over them, the YAML
    the arithmetic mean (25281.16 against 66825.51 frobenius ops/s); one name for both compared unlike figures."""
    table = parse_text(read_text(DEBIAN / "stress-ng-cpu-2-matrix-2.log")).values()
    yaml = parse_text(read_text(DEBIAN / "stress-ng-cpu-2-matrix-2.yaml")).values()
    assert table["matrix_frobenius_matrix_ops_per_sec"] == 25281.16
    assert yaml["matrix_frobenius_matrix_ops_per_sec_mean_over_instances"] == 66825.505014
    shared = table.keys() & yaml.keys()
    assert {"matrix_bogo_ops", "cpu_bogo_ops_per_second_real"} <= shared and len(shared) == 12
    assert all(abs(table[name] - yaml[name]) <= 0.0051 for name in shared)
    one = parse_text(read_text(DEBIAN / "stress-ng-matrix-1-sn.yaml")).values()  # one instance: the table's names
    assert one["frobenius_matrix_ops_per_sec"] == 123120.5 and not any(n.endswith("_instances") for n in one)


def test_a_rows_instances_list_says_how_many_instances_its_misc_metrics_are_over() -> None:
    """A one-instance row that used no CPU time (cpu-usage-per-instance 0) could not show its one instance and got
    `_mean_over_instances` names; its `instances:` list (as in hwbench's 0.21.03 capture) now says one, or two."""
    report = read_text(DEBIAN / "stress-ng-matrix-1-sn.yaml")
    idle = report.replace("      user-time: 2.371000e-02\n", "      user-time: 0.000000e+00\n").replace(
        "      cpu-usage-per-instance: 2.524419e+01\n", "      cpu-usage-per-instance: 0.000000e+00\n")
    assert idle.count("e+00\n") == report.count("e+00\n") + 2
    listed = "      zero-matrix-ops-per-sec: 1.067641e+06\n"
    entry = "          - instance: {0}\n            bogo-ops: {1}\n"
    one = idle.replace(listed, listed + "      instances:\n" + entry.format(0, 200))
    two = report.replace(listed, listed + "      instances:\n" + entry.format(0, 100) + entry.format(1, 100))
    assert parse_text(one).values()["frobenius_matrix_ops_per_sec"] == 123120.5
    for several in (idle, two):  # no list and no CPU time: taken for several, as before
        values = parse_text(several).values()
        assert values["frobenius_matrix_ops_per_sec_mean_over_instances"] == 123120.5
        assert "frobenius_matrix_ops_per_sec" not in values


def test_a_yaml_row_whose_stressor_line_or_cpu_usage_is_lost_is_refused() -> None:
    report = read_text(DEBIAN / "stress-ng-cpu-2-matrix-2.yaml")
    swapped = report.replace("metrics:\n    - stressor: cpu\n", "    - stressor: cpu\nmetrics:\n")
    no_usage = "\n".join(line for line in report.split("\n") if line != "      cpu-usage-per-instance: 15.108104")
    for damaged in (swapped, no_usage):  # the first gave the matrix figures as the run's, the second other names
        assert damaged != report
        with pytest.raises(ParseFailure, match="missing") as failure:
            parse_text(damaged)
        assert failure.value.reason == "unknown-format"


def test_a_top_level_line_before_a_metrics_row_is_refused_not_the_row_dropped() -> None:
    """A `times:` line out of place before the matrix row of a cpu+matrix run ended the metrics section there: the
    matrix row was dropped and the run read as a lone cpu run (the stress-ng-cpu template's primary metric)."""
    report = read_text(DEBIAN / "stress-ng-cpu-2-matrix-2.yaml")
    moved = report.replace("\n\n    - stressor: matrix", "\n\ntimes:\n    - stressor: matrix")
    assert moved != report
    for tool in (None, "stress-ng-cpu"):
        with pytest.raises(ParseFailure, match="metrics row after `times:`: a line is out of place") as failure:
            parse_text(moved, tool)
        assert failure.value.reason == "unknown-format"
    later = report.replace("\n...", "\ntimes:\n    - stressor: matrix\n      run-time: 1.02\n...")  # no bogo-ops
    assert parse_text(later).values() == parse_text(report).values()


def test_a_table_row_among_the_misc_metrics_is_read_as_a_row() -> None:
    """Lines out of order put `matrix  2642  1.01 ...` after `miscellaneous metrics:`: it was read as a misc
    metric named `matrix_1_01_0_30_...`, the matrix row lost."""
    log = read_text(DEBIAN / "stress-ng-cpu-2-matrix-2.log")
    lines = log.split("\n")
    row = next(i for i, line in enumerate(lines) if "] matrix  " in line and "2642" in line)
    assert lines[row + 1].endswith("miscellaneous metrics:")
    lines[row], lines[row + 1] = lines[row + 1], lines[row]
    assert parse_text("\n".join(lines)).values() == parse_text(log).values()


def test_a_scientific_notation_table_is_read_and_agrees_with_its_yaml() -> None:
    """--sn prints the row as `200 3.217e-01 2.400e-02 ...` and misc metrics as `4.66e+05`: the row was refused
    as cut inside a figure (its figures lack 2 decimals); a figure cut inside its exponent still is, and one cut
    after its mantissa's 2 decimals (`8.43526e+03` to `8.43`, read as 8.43): the row's first figure says its form."""
    log = read_text(DEBIAN / "stress-ng-matrix-1-sn.log")
    table = parse_text(log).values()
    yaml = parse_text(read_text(DEBIAN / "stress-ng-matrix-1-sn.yaml")).values()
    assert table["bogo_ops"] == yaml["bogo_ops"] == 200 and len(table) == len(yaml) > 20
    for name, value in table.items():  # 3 to 6 significant digits in the table
        assert value == pytest.approx(yaml[name], rel=0.005, abs=1e-9), name
    row = next(line for line in log.split("\n") if "] matrix  " in line and " 200 " in line)
    figure = row.split()[-3]  # the usr+sys rate, `%14.5e`
    for cut in (figure[:-1], figure[:4]):
        with pytest.raises(ParseFailure, match="cut inside a figure"):
            parse_text(log.replace(row, row.replace(figure, cut)))
        brief = log[:log.index(row)] + row[:row.index(figure)] + cut + "\n"  # --metrics-brief: the row's last figure
        with pytest.raises(ParseFailure, match="cut inside a figure"):
            parse_text(brief)


def test_a_yaml_report_without_metrics_says_to_add_metrics_brief() -> None:
    """Without --metrics-brief (or with --quiet) the report holds system-info only: it was refused as `no
    stress-ng: lines found`, as if it were no stress-ng output; now as its table's log is, naming the option."""
    for name in ("stress-ng-cpu-1-yaml-no-metrics.yaml", "stress-ng-cpu-1-yaml-no-metrics.log"):
        for tool in (None, "stress-ng"):
            with pytest.raises(ParseFailure, match="--metrics-brief") as failure:
                parse_text(read_text(DEBIAN / name), tool)
            assert failure.value.reason == "unknown-format"
