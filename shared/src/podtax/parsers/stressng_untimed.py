"""Which of stress-ng's miscellaneous metrics it prints as 0 when it timed nothing (pure data, from its sources).

stress-ng sets many misc metrics with a fallback for nothing timed: `rate = (duration > 0.0) ? bytes / duration :
0.0` where `duration` adds up the time of the calls it counts (hdd's `MB/sec read rate` of a run that only wrote),
or `rate = (count > 0.0) ? duration / count : 0.0` (mlock's `nanosecs per munlock call` of a run that timed no
munlock). Such a 0 is no figure: read as one it would be the slowest rate, or the fastest call, ever measured.
Every other 0 is measured and kept: a rate over the whole run (`duration = stress_time_now() - t_start`:
mmaptorture's `pages locked per sec` when mlock is refused, fanotify's `opens/sec`, swap's `pages swapped out per
second`, llc-affinity's `CPU affinity changes per sec`), a count, a share, or a time stress-ng sets only when it timed
something (vm's `ms mmap min. duration`, vdso's `nanosecs per call (excluding test overhead)`).

The lists below were read off every stress_metrics_set (stress_misc_stats_set before 0.15) call of stress-ng 0.13.12
to 0.22.00 and its git head of 2026-08 whose figure has such a fallback, by stressor: one description may be a
fallback in one stressor and a whole-run rate in another (`MB written per sec`: sockpair times its writes,
icmp-flood divides by its run). Descriptions are compared as stress-ng's YAML keys them (stressng_names.yaml_key),
so a metrics table and the `--yaml` report of one run agree.
"""

from __future__ import annotations

from functools import lru_cache

from podtax.parsers.stressng_names import misc_desc, yaml_key

_UNTIMED: dict[str, tuple[str, ...]] = {
    "access": ("access calls per sec",),
    "bigheap": ("realloc calls per sec",),
    "bind-mount": ("microsecs per mount", "microsecs per umount"),
    "binderfs": ("microsecs per mount", "microsecs per umount"),
    "bitonicsort": ("bitonicsort comparisons per item", "bitonicsort comparisons per sec"),
    "brk": ("nanosecs per sbrk page expand", "nanosecs per sbrk page shrink"),
    "bsearch": ("bsearch comparisons per item", "bsearch comparisons per sec"),
    "bubblesort": ("bubblesort comparisons per item", "bubblesort comparisons per sec"),
    "chdir": ("chdir calls per sec",),
    "chroot": ("chroot calls per sec",),
    "clone": ("microsecs per clone",),
    "close": ("close calls per sec",),
    "context": ("swapcontext calls per sec",),
    "copy-file": ("MB per sec copy rate",),
    "cpu-online": ("millisecs per offline action", "millisecs per online action"),
    "crc": ("Mbits/sec CRC'd",),
    "dekker": ("nanosecs per mutex",),
    "dentry": (
        "nanosecs per bogus file access", "nanosecs per bogus file unlink", "nanosecs per file access",
        "nanosecs per file creation",
    ),
    "dentrycache": ("nanosecs per negative dentry operation",),
    "dirmany": ("files created per sec", "files removed per sec"),
    "dup": ("nanosecs per dup call",),
    "dynlib": ("nanosecs per dlsym lookup",),
    "efivar": ("EFI raw data reads per sec", "efi raw data reads per sec"),
    "factor": ("average number of factors", "millisec per factorization"),
    "far-branch": ("nanosecs per call/return",),
    "fault": ("nanosecs per page fault",),
    "fd-fork": ("nanosecs per fd close",),
    "fibsearch": ("fibsearch comparisons per item", "fibsearch comparisons per sec"),
    "flock": ("nanosecs per flock lock call", "nanosecs per flock unlock call"),
    "forkheavy": ("microsecs per fork",),
    "getdent": ("nanosecs per getdents call",),
    "getrandom": ("getrandom bits per sec",),
    "gpu": ("MHz GPU frequency",),
    "hdd": ("MB/sec read rate", "MB/sec read/write combined rate", "MB/sec write rate"),
    "heapsort": ("heapsort comparisons per item", "heapsort comparisons per sec"),
    "insertionsort": ("insertionsort comparisons per item", "insertionsort comparisons per sec"),
    "kill": ("kill calls per sec",),
    "llc-affinity": (
        "MB pec sec memory write rate", "MB per sec memiry read rate", "MB per sec memory read rate",
        "MB per sec memory write rate",
    ),
    "lockbus": ("nanosecs per memory lock operation",),
    "lsearch": ("lsearch comparisons per item", "lsearch comparisons per sec"),
    "lsm": ("lsm_get_self_attr calls per sec", "lsm_list_modules calls per sec"),
    "membarrier": ("membarrier calls per sec",),
    "memfd": ("nanosecs per memfd_create call",),
    "memhotplug": ("millisecs per offline action", "millisecs per online action"),
    "mergesort": ("mergesort comparisons per item", "mergesort comparisons per sec"),
    "mincore": ("nanosecs per mincore call",),
    "mlock": ("nanosecs per mlock call", "nanosecs per munlock call"),
    "mmapcow": ("nanosecs per page modification (includes page fault, estimated)",),
    "mmapfiles": (
        "file mmaps per sec", "file munmap per sec", "file pages mmap'd per sec", "file pages munmap'd per sec",
        "pages per mapping",
    ),
    "mremap": ("nanosecs per mremap call",),
    "mseal": ("mseal calls per sec",),
    "mtx": ("nanosecs per mtx",),
    "munmap": ("nanosecs per page mmap()", "nanosecs per page munmap()"),
    "mutex": ("nanosecs per mutex",),
    "nop": ("nanosecs per nop instruction", "picosecs per nop instruction"),
    "null": ("MB per sec /dev/null write rate",),
    "numacopy": ("numa_pages filled per sec", "pages copied per sec"),
    "open": ("nanosecs per open",),
    "pagemove": ("page remaps per sec",),
    "pageswap": ("microsecs per page swapout", "millisecs per page swapout"),
    "peterson": ("nanosecs per mutex",),
    "pipe": ("MB per sec pipe write rate",),
    "prime": ("primes per second",),
    "priv-instr": ("nanosecs per privileged op trap",),
    "pseek": ("MB/sec read rate", "MB/sec write rate"),
    "pthread": ("nanosecs to start a pthread",),
    "ptr-chase": ("nanosec per pointer",),
    "qsort": ("qsort comparisons per item", "qsort comparisons per sec"),
    "remap": ("nanosecs per page remap",),
    "ring-pipe": ("MB per sec data pipe write", "pipe read+write calls per sec"),
    "seek": ("nanosecs per seek",),
    "sendfile": ("MB per sec sent to /dev/null",),
    "shellsort": ("shellsort comparisons per item", "shellsort comparisons per sec"),
    "sigabrt": ("nanosec SIGABRT latency",),
    "sighup": ("nanosec SIGHUP latency",),
    "signest": ("nanosec to handle a signal",),
    "sigrt": ("nanosecs between sigqueue and sigwaitinfo completion",),
    "sigtrap": ("nanosecs to handle SIGTRAP",),
    "sockpair": ("MB written per sec",),
    "spinmem": ("nanoseconds per spin write/read",),
    "splice": ("MB per sec splice rate",),
    "statmount": ("statmount calls per sec",),
    "tee": ("MB per sec tee rate",),
    "tsc": ("nanosecs per time counter read",),
    "tsearch": ("tsearch comparisons per item", "tsearch comparisons per sec"),
    "unlink": ("unlink calls per sec",),
    "unshare": ("nanosecs per unshare call",),
    "urandom": ("million random bits per sec",),
    "userfaultfd": ("nanosecs per page fault",),
    "usersyscall": ("nanosecs per syscall",),
    "utime": ("utime calls per sec",),
    "vm-splice": ("MB per sec vm-splice rate", "vm-splice calls per sec"),
    "x86cpuid": ("nanosecs per cpuid instruction",),
    "yield": ("ns duration per sched_yield call",),
    "zero": ("MB per sec /dev/zero read rate",),
}
# Stressors whose every misc metric is a rate or time of its own timed calls with that fallback, printed under
# descriptions filled in at run time (`%s atomic ops per sec`, `nanosecs per inb(0x%x) op`, `Judy %s operations per
# sec`, `regcomp '%s' per sec`, `%s %u bit computations per sec`, acl's and cache's arrays of descriptions).
_ALL_UNTIMED = frozenset(("acl", "atomic", "cache", "crypt", "fp-misc", "ioport", "judy", "mpfr", "regex", "rofs",
                          "shm-sysv", "sparsematrix", "vecwide"))
_KEYS = {stressor: frozenset(yaml_key(d).rstrip("-") for d in descs) for stressor, descs in _UNTIMED.items()}


def untimed(value: float, stressor: str, desc: str) -> bool:
    """A misc metric of `stressor` printed as `value` under `desc` (as a metrics table prints it) is stress-ng's 0
    for nothing timed, no figure."""
    return value == 0.0 and _untimed_key(stressor, yaml_key(misc_desc(desc)).rstrip("-"))


def untimed_key(value: float, stressor: str, key: str) -> bool:
    """The same for a misc metric of a `--yaml` report, named by its key (`mbsec-read-rate`)."""
    return value == 0.0 and _untimed_key(stressor, key.rstrip("-"))


@lru_cache(maxsize=1024)
def _untimed_key(stressor: str, key: str) -> bool:
    """Cached: called only for a 0, and the same few repeat from log to log."""
    if stressor in _ALL_UNTIMED:
        return True
    keys = _KEYS.get(stressor)
    return keys is not None and key in keys
