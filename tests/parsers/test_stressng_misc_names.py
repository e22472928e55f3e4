"""Names, units and directions of stress-ng's miscellaneous metrics (table-driven): descriptions as
stress-ng prints them (its sources, 0.13 to 0.22), the name suffix, unit and whether higher is better."""

from __future__ import annotations

import pytest
from podtax.parsers.stressng_names import misc_metric

CASES = [
    # rates: higher is better
    ("add matrix ops per sec (harmonic mean of 1 instance)", "add_matrix_ops_per_sec", "add matrix ops/s", True),
    ("Mfp-ops per sec, float64 add", "mfp_ops_per_sec_float64_add", "Mfp-ops/s", True),
    ("cache ops per second", "cache_ops_per_second", "cache ops/s", True),
    ("MB per sec memory read rate", "mb_per_sec_memory_read_rate", "MB/s", True),
    ("write128 MB/sec (average per stressor)", "write128_mb_sec", "MB/s", True),
    ("memory read rate (MB per sec) (geometic mean)", "memory_read_rate_mb_per_sec", "MB/s", True),
    ("packets (32 bytes) received per sec", "packets_32_bytes_received_per_sec", "packets (32 bytes) received/s",
     True),
    ("socketpair calls sec (harmonic mean of 192 instances)", "socketpair_calls_sec", "socketpair calls/s", True),
    ("TLB shootdowns/sec", "tlb_shootdowns_sec", "shootdowns/s", True),
    # costs: lower is better, rates of failures included
    ("nanosecs per call (average per stressor)", "nanosecs_per_call", "nanosecs per call", False),
    ("ms mmap avg. duration", "ms_mmap_avg_duration", "ms mmap avg. duration", False),
    ("seconds to open all file descriptors", "seconds_to_open_all_file_descriptors",
     "seconds to open all file descriptors", False),
    ("nanosec SIGABRT latency", "nanosec_sigabrt_latency", "nanosec SIGABRT latency", False),
    ("NUMA misses per sec", "numa_misses_per_sec", "NUMA misses per sec", False),
    ("/dev/mem mmaps failed", "dev_mem_mmaps_failed", "/dev/mem mmaps failed", False),
    ("qsort comparisons per item", "qsort_comparisons_per_item", "qsort comparisons per item", False),
    ("context switches per bogo op", "context_switches_per_bogo_op", "context switches per bogo op", False),
    ("% compression ratio", "compression_ratio", "% compression ratio", False),
    ("byte average in queue length", "byte_average_in_queue_length", "byte average in queue length", False),
    # work done in the run, or its success: higher is better
    ("packets received (total of 2 instances)", "packets_received", "packets received", True),
    ("primes found", "primes_found", "primes found", True),
    ("digits in largest prime (maximum of 4 instances)", "digits_in_largest_prime", "digits in largest prime", True),
    ("mmaps total", "mmaps_total", "mmaps total", True),
    ("% sendto calls succeeded", "sendto_calls_succeeded", "% sendto calls succeeded", True),
    ("% of 128 pthreads created", "of_128_pthreads_created", "% of 128 pthreads created", True),
    ("MHz GPU frequency", "mhz_gpu_frequency", "MHz GPU frequency", True),
    # anything else: lower is better, the description as its unit
    ("extents per file", "extents_per_file", "extents per file", False),
]


@pytest.mark.parametrize("printed, name, unit, higher", CASES, ids=[c[0][:40] for c in CASES])
def test_misc_metric(printed: str, name: str, unit: str, higher: bool) -> None:
    assert misc_metric(printed) == (name, unit, higher)
