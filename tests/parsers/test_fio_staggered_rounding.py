"""One fio 3.33 run (numjobs=2, no group_reporting) in its two forms, from tests/corpus/debian12-x86_64 (see
COMMANDS.tsv): the text and the JSON report must say the same about it, flags included."""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, parse_text

from tests.parsers.corpus_index import CORPUS, read_text

DEBIAN = CORPUS / "debian12-x86_64"


def test_the_staggered_check_of_text_and_json_agree_on_one_run() -> None:
    """The jobs' summed rate is 2.94% over the group's KiB over its longest runtime: no STAGGERED in JSON. The
    text compared the rates' 3 printed digits (118 + 111 MiB/s against 222 MiB/s: 3.15%) and flagged it; it now
    compares the KiB and runtimes it prints (`(4096KiB/34msec)`, `io=8192KiB ..., run=34-36msec`), as JSON does."""
    text = parse_text(read_text(DEBIAN / "fio-randread-4k-numjobs2-normal.txt"), "fio")
    report = parse_text(read_text(DEBIAN / "fio-randread-4k-numjobs2.json"), "fio")
    assert report.flags == ()
    assert [f for f in text.flags if not f.startswith("TEXT_OUTPUT: ")] == []
    assert text.values()["read_iops"] == pytest.approx(report.values()["read_iops"], rel=0.006)
    assert text.values()["read_bw"] == pytest.approx(report.values()["read_bw"], rel=0.006)


def test_a_job_whose_name_or_place_is_lost_is_refused_not_renamed() -> None:
    """Found by the damage harness on these captures: a JSON job without its `jobname` line put its figures
    under `job_read_iops`; a text whose first job's report stands after `Run status group` (streams joined in
    the other order) gave the second job's figures the first one's name."""
    report = read_text(DEBIAN / "fio-randread-4k-numjobs2.json")
    nameless = report.replace('"jobname" : "n",', "", 1)
    text = read_text(DEBIAN / "fio-randread-4k-numjobs2-normal.txt")
    first = text.index("n: (groupid=0")
    second = text.index("n: (groupid=0", first + 1)
    moved = text[:first] + text[second:] + text[first:second]
    for damaged, words in ((nameless, "no `jobname`"), (moved, "after the run's `Run status group`")):
        assert damaged not in (report, text)
        with pytest.raises(ParseFailure, match=words) as failure:
            parse_text(damaged, "fio")
        assert failure.value.reason == "unknown-format"


def test_rates_in_bits_are_read_as_the_json_gives_them() -> None:
    """unit_base=1 prints `BW=12.5Gibit/s (13.4Gbit/s)` and `READ: bw=12.5Gibit/s`: the text was refused (a line
    in a form podtax does not read); its JSON gives bw in KiB/s as always."""
    text = parse_text(read_text(DEBIAN / "fio-read-64k-unit-base-bits-normal.txt"), "fio").values()
    report = parse_text(read_text(DEBIAN / "fio-read-64k-unit-base-bits.json"), "fio").values()
    assert text["read_bw"] == report["read_bw"] == 12.5 * 1024 * 1024 / 8
    assert text["read_iops"] == pytest.approx(report["read_iops"], rel=0.006)
