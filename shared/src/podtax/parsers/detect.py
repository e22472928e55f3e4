"""Which tool wrote a log: cheap substring and line-start signatures, no parsing."""

from __future__ import annotations

import re

_SYSBENCH = re.compile(r"^sysbench \d+\.\d+", re.M)
_SYSBENCH_WORDS = ("Operations performed:", "Test execution summary:", "General statistics:",
                   "per-request statistics:", "Prime numbers limit:", "Number of threads:")
_STRESSNG_WORDS = ("stress-ng: ", "stress-ng-version", "cpu-method must be one of", "stress-ng, version",
                   "Try 'stress-ng --help'")
_HDPARM_WORDS = ("Timing cached reads", "Timing buffered disk reads", "Timing O_DIRECT", "HDIO_")
_HDPARM_DEVICE = re.compile(r"^\s*/dev/[\w/.-]+:[ \t]*(?:Operation not permitted|Permission denied"
                            r"|No such file or directory)?[ \t]*$", re.M)
_FIO = re.compile(r"^fio-\d", re.M)
_FIO_WORDS = ('"fio version"', "(groupid=", "(g=0): rw=")


def tools_in(text: str) -> list[str]:
    """Every tool whose signature appears in `text`, in a fixed order."""
    found: list[str] = []
    if _SYSBENCH.search(text) or any(w in text for w in _SYSBENCH_WORDS):
        found.append("sysbench")
    if any(w in text for w in _STRESSNG_WORDS):
        found.append("stress-ng")
    if any(w in text for w in _HDPARM_WORDS) or _HDPARM_DEVICE.search(text):
        found.append("hdparm")
    if any(w in text for w in _FIO_WORDS) or _FIO.search(text):
        found.append("fio")
    return found
