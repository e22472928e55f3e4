"""fio jobs that sync between their writes (audit hG): `--fsync=4` gave 26k write IOPS and `--fdatasync=1`
9k on a page-cached file where the same job without them gave 540k, and podtax stored write_iops unflagged, so
an imported fsync run joined a cell of the template's runs (which issue no syncs). Now a report that timed
syncs (JSON `"sync"` block with N > 0, text `sync (usec):` line) is flagged PARAM_MISMATCH; `end_fsync=1`'s
one untimed sync at the end is not. Real captures tests/corpus-found (README, with the commands)."""

from __future__ import annotations

from pathlib import Path

import pytest
from podtax.parsers import parse_run

FOUND = Path(__file__).resolve().parents[1] / "corpus-found"
CASES = {  # capture: (write_iops, flag's count)
    "fio-3.33-randwrite-fsync4.json": (26093.906094, "6530 syncs"),
    "fio-3.33-randwrite-fdatasync1-text.log": (9096e3 / 1001, "timed syncs"),  # `IOPS=9086`
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_synced_writes_are_a_param_mismatch(name: str) -> None:
    parsed = parse_run("fio", (FOUND / name).read_text(), requested={"rw": "randwrite", "bs": "4k"})
    iops, count = CASES[name]
    assert parsed.metric("write_iops").value == pytest.approx(iops, rel=1e-12)
    flags = [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: fsync: ")]
    assert len(flags) == 1 and count in flags[0], parsed.flags


def test_end_fsync_alone_is_not_flagged() -> None:  # one sync after the job (`end_fsync=1`), not timed by fio
    parsed = parse_run("fio", (FOUND / "fio-6-jobs-startdelay-staggered.log").read_text())
    assert not [f for f in parsed.flags if f.startswith("PARAM_MISMATCH: fsync")], parsed.flags
    # its jobs ran ioengine=sync at iodepth=4, i.e. at depth 1 (test_fio_sync_engine_depth.py)
    depth = "PARAM_MISMATCH: iodepth: fio ran iodepth=4 with the synchronous engine sync"
    assert [f for f in parsed.flags if f.startswith("PARAM_MISMATCH")] == [f for f in parsed.flags
                                                                           if f.startswith(depth)]
