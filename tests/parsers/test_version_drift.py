"""Output forms of other tool versions than this host's, RECONSTRUCTED (not captures) from the upstream
printf format strings, to check the parsers read them right or refuse them clearly.

Each sample names the upstream release tag and the source lines it was built from; the figures are
computed as that code computes them (fio's num2str included), not copied from a real run.
"""

from __future__ import annotations

import pytest
from podtax.parsers import parse_text

# fio 2.2.10 (tag fio-2.2.10), stat.c show_ddir_status: `"  %s: io=%s, bw=%s/s, iops=%s, runt=%6llumsec\n"` with
# iops_p = num2str(iops, 6, 1, 0, 0), lib/num2str.c postfix { "", "K", "M", ... }: 10,066,330 reads of 4 KiB in
# 8000 msec (null ioengine) are 1,258,291 IOPS, printed `1258.3K`; io 39322MB, bw 4915.3MB/s (num2str's rounding).
# fio 2.0.x (char postfix `K`) and every release to 2.16 print the same upper-case K; 2.17 and later `k`.
FIO_2_2_10_MEGA_IOPS = """\
nullread: (g=0): rw=randread, bs=4K-4K/4K-4K/4K-4K, ioengine=null, iodepth=1
fio-2.2.10
Starting 1 process

nullread: (groupid=0, jobs=1): err= 0: pid=4242: Fri Apr  7 19:05:33 2017
  read : io=39322MB, bw=4915.3MB/s, iops=1258.3K, runt=  8000msec
    clat (usec): min=0, max=57, avg= 0.31, stdev= 0.12
     lat (usec): min=0, max=57, avg= 0.45, stdev= 0.14
    clat percentiles (usec):
     |  1.00th=[    0],  5.00th=[    0], 10.00th=[    0], 20.00th=[    0],
     | 30.00th=[    0], 40.00th=[    0], 50.00th=[    0], 60.00th=[    0],
     | 70.00th=[    1], 80.00th=[    1], 90.00th=[    1], 95.00th=[    1],
     | 99.00th=[    1], 99.50th=[    1], 99.90th=[    1], 99.95th=[    2],
     | 99.99th=[   10]
    bw (MB  /s): min= 4805, max= 5012, per=100.00%, avg=4915.22, stdev=61.41
    lat (usec) : 2=99.98%, 4=0.01%, 10=0.01%, 20=0.01%, 50=0.01%
    lat (usec) : 100=0.01%
  cpu          : usr=99.84%, sys=0.11%, ctx=13, majf=0, minf=10
  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued    : total=r=10066330/w=0/d=0, short=r=0/w=0/d=0, drop=r=0/w=0/d=0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
   READ: io=39322MB, aggrb=4915.3MB/s, minb=4915.3MB/s, maxb=4915.3MB/s, mint=8000msec, maxt=8000msec
"""


def test_fio2_million_iops_upper_case_k_is_read() -> None:
    """Refused before as `a form podtax does not read` (the pattern knew only a lower-case k)."""
    values = parse_text(FIO_2_2_10_MEGA_IOPS, "fio").values()
    assert values["read_iops"] == pytest.approx(1_258_300)
    assert values["read_bw"] == pytest.approx(4915.3 * 1024)
    assert values["read_clat_mean"] == pytest.approx(0.31)
