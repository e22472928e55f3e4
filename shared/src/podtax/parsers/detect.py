"""Which tool wrote a log: cheap substring signatures (C-speed `in`), no parsing and no
multi-line regex scans (those cost ~30 µs per 10 KiB)."""

from __future__ import annotations

import re

_SYSBENCH_WORDS = ("\nsysbench ", "Operations performed:", "Test execution summary:", "Prime numbers limit:",
                   "Number of threads:")
_SYSBENCH_STATS = ("General statistics:", "per-request statistics:")  # both need " statistics:"
_STRESSNG_WORDS = ("stress-ng: ", "stress-ng-version", "stress-ng, version", "Try 'stress-ng --help'")
_HDPARM_TIMING = ("Timing cached reads", "Timing buffered disk reads", "Timing O_DIRECT")  # need "Timing "
_HDPARM_DEVICE = re.compile(r"^\s*/dev/[\w/.-]+:[ \t]*(?:Operation not permitted|Permission denied"
                            r"|No such file or directory)?[ \t]*$", re.M)
_FIO_WORDS = ('"fio version"', "(groupid=", "(g=0): rw=", "\nfio-")


def _any(text: str, words: tuple[str, ...]) -> bool:
    for word in words:  # noqa: SIM110 - a plain loop is faster than any() over a generator
        if word in text:
            return True
    return False


def tools_in(text: str) -> list[str]:
    """Every tool whose signature appears in `text`, in a fixed order."""
    head = text[:200]
    if head.lstrip().startswith("---") and "stress-ng-version" in text[:4000]:
        return ["stress-ng"]  # a --yaml report (can be 100 KiB of per-instance figures)
    found: list[str] = []
    # A word's shared part is looked for first: absent, it rules out the whole group in one scan.
    if head.startswith("sysbench ") or _any(text, _SYSBENCH_WORDS) \
            or (" statistics:" in text and _any(text, _SYSBENCH_STATS)):
        found.append("sysbench")
    if ("stress-ng" in text and _any(text, _STRESSNG_WORDS)) or "cpu-method must be one of" in text:
        found.append("stress-ng")
    if ("Timing " in text and _any(text, _HDPARM_TIMING)) or "HDIO_" in text \
            or ("/dev/" in text and _HDPARM_DEVICE.search(text)):
        found.append("hdparm")
    if head.startswith("fio-") or _any(text, _FIO_WORDS):
        found.append("fio")
    if '"version":\t"iperf 3' in text or '"version": "iperf 3' in text:
        found.append("iperf3")
    if "sockperf: " in text and ("== version #" in text or "sockperf: ERROR" in text):
        found.append("sockperf")
    if head.lstrip().startswith("{"):
        start = text.find("{")
        end = text.find("\n", start)
        first = text[start:] if end < 0 else text[start:end]
        if '"kind"' in first and '"header"' in first:
            found.append("timeline")  # a control-plane timeline (JSON lines, header first)
    return found
