"""Captures of a sweep of option variants run with the real tools on a Debian 12 VM (tests/corpus-found/, its
README names each command): what each must give, figures checked against the log by hand. Each case failed (a
refusal of honest output, or a wrong echo) before the change it tests.
"""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, fio, fio_text

from tests.parsers.test_found_captures import CORPUS, parse


def test_fio_text_unified_both_reads_read_and_write_and_leaves_the_unprinted_mixed_out() -> None:
    # `--unified_rw_reporting=both`: fio 3.33 prints `mixed: IOPS=0, BW=0 (0)(0B/1001msec)` after the read and
    # write sections (its JSON has the real mixed figures); it was refused as `a form podtax does not read`
    values = parse("fio-3.33-unified-both-text.log", "fio").values()
    assert values["read_iops"] == 6230 and values["read_bw"] == pytest.approx(24.3 * 1024)
    assert values["read_clat_mean"] == 115.24 and values["read_clat_p99_99"] == 8455
    assert values["write_iops"] == 6269 and values["write_bw"] == pytest.approx(24.5 * 1024)
    assert values["write_clat_mean"] == pytest.approx(3.36858) and values["write_clat_max"] == pytest.approx(413.297)
    assert not any(name.startswith("mixed_") for name in values)  # never a mixed rate of 0


def test_fio_text_mixed_line_of_zeros_alone_is_still_refused() -> None:
    text = (CORPUS / "fio-3.33-unified-both-text.log").read_text(encoding="utf-8")
    start, end = text.index("  read: IOPS="), text.index("  mixed: IOPS=0")
    with pytest.raises(Exception, match="mixed line is in a form podtax does not read"):
        fio_text.parse(text[:start] + text[end:])  # no read or write section: nothing stands for the run


def test_fio_text_bssplit_echoes_the_block_size_range() -> None:
    # `--bssplit=4k/50:64k/50`: the header says `bs=(R) 4096B-64.0KiB`; its first size alone was echoed, so a
    # template asking bs=4k took this run for one of its own
    parsed = fio_text.parse((CORPUS / "fio-3.33-bssplit-text.log").read_text(encoding="utf-8"),
                            {"rw": "randread", "bs": "4k", "iodepth": 1})
    assert parsed.echoed["bs"] == "4096B-64.0KiB"
    assert "PARAM_MISMATCH: bs echoed as 4096B-64.0KiB, requested 4k" in parsed.flags
    assert parsed.values()["read_iops"] == 6745


def test_fio_json_bssplit_echoes_the_split_as_its_block_size() -> None:
    # the same run in JSON: `job options` holds `bssplit` and no `bs`, so nothing was echoed and nothing compared
    requested = {"rw": "randread", "bs": "4k", "iodepth": 1}
    parsed = fio.parse((CORPUS / "fio-3.33-bssplit.json").read_text(encoding="utf-8"), requested=requested)
    assert parsed.echoed["bs"] == "4k/50:64k/50"
    assert "PARAM_MISMATCH: bs echoed as 4k/50:64k/50, requested 4k" in parsed.flags


def test_sysbench_options_that_exclude_each_other_are_a_bad_argument() -> None:
    # `--histogram --percentile=0`: sysbench refuses the pair before its banner; it was named a run that stopped
    with pytest.raises(ParseFailure) as caught:
        parse("sysbench-1.0.20-histogram-percentile-0.log", "sysbench-memory")
    assert caught.value.reason == "bad-argument"
    assert "--histogram cannot be used with --percentile=0" in str(caught.value)
