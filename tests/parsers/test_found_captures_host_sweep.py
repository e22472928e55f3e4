"""Captures of a sweep of option variants run with the real tools on a Debian 12 VM (tests/corpus-found/, its
README names each command): what each must give, figures checked against the log by hand. Each case failed (a
refusal of honest output, or a wrong echo) before the change it tests.
"""

from __future__ import annotations

import pytest
from podtax.parsers import ParseFailure, fio, fio_blocks, fio_text
from podtax.parsers.base import Parsed

from tests.parsers.test_found_captures import CORPUS, parse


def test_fio_text_unified_both_reads_read_and_write_and_leaves_the_unprinted_mixed_out() -> None:
    # `--unified_rw_reporting=both`: fio 3.33 prints `mixed: IOPS=0, BW=0 (0)(0B/1001msec)` after the read and
    # write sections (its JSON has the real mixed figures); it was refused as `a form podtax does not read`
    values = parse("fio-3.33-unified-both-text.log", "fio").values()
    assert values["read_iops"] == pytest.approx(6237e3 / 1001) and values["read_bw"] == pytest.approx(24.3 * 1024)
    assert values["read_clat_mean"] == 115.24 and values["read_clat_p99_99"] == 8455
    assert values["write_iops"] == pytest.approx(6276e3 / 1001) and values["write_bw"] == pytest.approx(24.5 * 1024)
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
    assert parsed.values()["read_iops"] == pytest.approx(6752e3 / 1001)  # `IOPS=6745`: its issued over 1001 ms


def test_fio_json_bssplit_echoes_the_split_as_its_block_size() -> None:
    # the same run in JSON: `job options` holds `bssplit` and no `bs`, so nothing was echoed and nothing compared
    requested = {"rw": "randread", "bs": "4k", "iodepth": 1}
    parsed = fio.parse((CORPUS / "fio-3.33-bssplit.json").read_text(encoding="utf-8"), requested=requested)
    assert parsed.echoed["bs"] == "4k/50:64k/50"
    assert "PARAM_MISMATCH: bs echoed as 4k/50:64k/50, requested 4k" in parsed.flags


def _both(name: str, requested: dict[str, object]) -> tuple[Parsed, Parsed]:
    """The text and the JSON capture of one run."""
    text = fio_text.parse((CORPUS / f"{name}-text.log").read_text(encoding="utf-8"), dict(requested))
    return text, fio.parse((CORPUS / f"{name}.json").read_text(encoding="utf-8"), requested=dict(requested))


def test_fio_text_bssplit_of_the_writes_echoes_the_write_sizes() -> None:
    # `--rw=randwrite --bssplit=,4k/50:64k/50`: the header says `(R) 4096B-4096B, (W) 4096B-64.0KiB`; only the
    # (R) bounds were read, so the text echoed 4096B and a template asking bs=4k took the run for its own (the
    # JSON of the same run flagged it)
    requested = {"rw": "randwrite", "bs": "4k", "iodepth": 1}
    text, json = _both("fio-3.33-bssplit-writes", requested)
    assert text.echoed["bs"] == "4096B-64.0KiB"
    assert "PARAM_MISMATCH: bs echoed as 4096B-64.0KiB, requested 4k" in text.flags
    assert json.echoed["bs"] == ",4k/50:64k/50"
    assert "PARAM_MISMATCH: bs echoed as ,4k/50:64k/50, requested 4k" in json.flags
    assert text.values()["write_iops"] == pytest.approx(281359e3 / 1001)  # `IOPS=281k`
    assert json.values()["write_iops"] == pytest.approx(279618.381618)


@pytest.mark.parametrize(("rw", "bs"), [("randread", "4096B"), ("randwrite", "4096B-64.0KiB"),
                                        ("randtrim", "4096B-64.0KiB"), ("randrw", "4096B,4096B-64.0KiB")])
def test_fio_text_echoes_the_block_sizes_of_the_directions_rw_uses(rw: str, bs: str) -> None:
    # the capture's header with another rw: reads keep 4k, writes (and trims, which inherit them) mix sizes
    line = (CORPUS / "fio-3.33-bssplit-writes-text.log").read_text(encoding="utf-8").split("\n", 1)[0]
    assert fio_blocks.head(line.replace("rw=randwrite", f"rw={rw}")) == {"rw": rw, "bs": bs, "ioengine": "psync",
                                                                          "iodepth": 1}


def test_fio_json_bssplit_wins_over_bs() -> None:
    # `--bs=4k --bssplit=4k/50:64k/50`: fio uses the split (19 KiB per read), but the JSON echoed bs=4k, so no flag
    requested = {"rw": "randread", "bs": "4k", "iodepth": 1}
    text, json = _both("fio-3.33-bs-and-bssplit", requested)
    assert json.echoed["bs"] == "4k/50:64k/50"
    assert "PARAM_MISMATCH: bs echoed as 4k/50:64k/50, requested 4k" in json.flags
    assert "PARAM_MISMATCH: bs echoed as 4096B-64.0KiB, requested 4k" in text.flags
    assert json.values()["read_iops"] == pytest.approx(8066.933067)


def test_fio_split_of_one_size_is_that_size() -> None:
    # `--bs=4k --bssplit=4k/100`: every I/O is 4k, so no mismatch with bs=4k, in JSON as in text
    requested = {"rw": "randread", "bs": "4k", "iodepth": 1}
    text, json = _both("fio-3.33-bssplit-one-size", requested)
    assert (text.echoed["bs"], json.echoed["bs"]) == ("4096B", "4k")
    assert not [flag for flag in text.flags + json.flags if flag.startswith("PARAM_MISMATCH")]
    flags = fio.parse((CORPUS / "fio-3.33-bssplit-one-size.json").read_text(encoding="utf-8"),
                      requested={**requested, "bs": "8k"}).flags
    assert "PARAM_MISMATCH: bs echoed as 4k, requested 8k" in flags


def test_sysbench_options_that_exclude_each_other_are_a_bad_argument() -> None:
    # `--histogram --percentile=0`: sysbench refuses the pair before its banner; it was named a run that stopped
    with pytest.raises(ParseFailure) as caught:
        parse("sysbench-1.0.20-histogram-percentile-0.log", "sysbench-memory")
    assert caught.value.reason == "bad-argument"
    assert "--histogram cannot be used with --percentile=0" in str(caught.value)
