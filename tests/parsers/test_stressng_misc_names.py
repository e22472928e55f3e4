"""Names, units and directions of stress-ng's miscellaneous metrics (table-driven): descriptions as
stress-ng prints them (its sources, 0.13 to 0.22), the name suffix, unit and whether higher is better; and a
description as a metrics table prints it and its `--yaml` key give the same metric."""

from __future__ import annotations

import pytest
from podtax.parsers.stressng_names import misc_desc, misc_metric, yaml_key, yaml_misc_metric

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
    ("million random bits / sec", "million_random_bits_sec", "million random bits/s", True),  # was `bits //s`
    ("MB pec sec memory write rate (geometic mean of 1 instances)", "mb_pec_sec_memory_write_rate", "MB/s",
     True),  # llc-affinity's typo (0.15.00 to 0.15.09): was lower-is-better, its description as unit
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


# (description as the table prints it, its YAML key, the metric both give)
FORMS = [
    ("MB/sec read rate (geometic mean of 1 instances)", "mbsec-read-rate", ("mb_sec_read_rate", "MB/s", True)),
    ("MB per sec pipe write rate (geometric mean of 1 instance)", "mb-per-sec-pipe-write-rate",
     ("mb_per_sec_pipe_write_rate", "MB/s", True)),
    ("TLB shootdowns/sec", "tlb-shootdownssec", ("tlb_shootdowns_sec", "shootdowns/s", True)),
    ("SHA-256 encrypts per sec (harmonic mean of 1 instance)", "sha256-encrypts-per-sec",
     ("sha_256_encrypts_per_sec", "SHA-256 encrypts/s", True)),
    # a template of stress-ng's, its method in place of `%s`; `%-20s` pads the method with spaces
    ("Mfp-ops per sec, long double add (geometric mean of 1 instance)", "mfpops-per-sec-long-double-add------",
     ("mfp_ops_per_sec_long_double_add", "Mfp-ops/s", True)),
    ("nanosecs per context switch (pipe method)", "nanosecs-per-context-switch-pipe-method",
     ("nanosecs_per_context_switch_pipe_method", "nanosecs per context switch (pipe method)", False)),
    # keys of 39 characters are cut: the description's end comes back from stress-ng's wording
    ("nanosecs per context switch (futex method)", "nanosecs-per-context-switch-futex-metho",
     ("nanosecs_per_context_switch_futex_method", "nanosecs per context switch (futex method)", False)),
    ("nanosecs per page modification (includes page fault, estimated)", "nanosecs-per-page-modification-includes",
     ("nanosecs_per_page_modification_includes_page_fault_estimated",
      "nanosecs per page modification (includes page fault, estimated)", False)),
    # a `%` first: the key starts with `-`
    ("% of 128 pthreads created", "-of-128-pthreads-created", ("of_128_pthreads_created", "% of 128 pthreads created",
                                                               True)),
    ("add matrix ops per sec (geometic mean of 1 instances)", "add-matrix-ops-per-sec",
     ("add_matrix_ops_per_sec", "add matrix ops/s", True)),
]


@pytest.mark.parametrize("printed, key, metric", FORMS, ids=[f[1] for f in FORMS])
def test_a_description_and_its_yaml_key_give_one_metric(printed: str, key: str, metric: tuple[str, str, bool]) \
        -> None:
    assert yaml_key(misc_desc(printed)) == key.rstrip("-")[:39]
    assert misc_metric(printed) == yaml_misc_metric(key) == metric


def test_a_table_keeps_its_printed_words_where_the_key_lost_them() -> None:
    """A description stress-ng's sources do not give: its key lost the `/` and the case, which only its table still
    has. The table's metric keeps its printed words (the name and unit stored results carry; review r2: going
    through the key renamed `x86_64` methods and changed units stored before), its key gets the key's words."""
    assert misc_metric("Foo/bar ops per sec") == ("foo_bar_ops_per_sec", "Foo/bar ops/s", True)
    assert yaml_misc_metric("foobar-ops-per-sec") == ("foobar_ops_per_sec", "foobar ops/s", True)
    assert misc_metric("lease sigio interrupts per sec") == ("lease_sigio_interrupts_per_sec",
                                                             "lease sigio interrupts/s", True)


@pytest.mark.parametrize("size", [40, 3_000, 20_000])
def test_a_forged_long_key_takes_the_plain_words_at_once(size: int) -> None:
    """stress-ng writes no key over 39 characters; a forged one of 20,000 went through every template's patterns
    (19 s, review r2). It takes the key's words (the bound is the test's timeout, not a timing)."""
    key = ("a-" * size)[:size] + "x-matrix-ops-per-sec"  # every `-` a place a template's `%s` may end
    assert yaml_misc_metric(key)[0] == key.replace("-", "_")
