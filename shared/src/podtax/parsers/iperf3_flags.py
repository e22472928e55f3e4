"""The flags of an iperf3 run against what podtax's iperf3 template runs (pure functions, moved from iperf3.py):
a cap other than the requested bitrate, a run bound by an amount instead of a time, and omitted seconds (-O)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_RATE = re.compile(r"^([0-9]{1,12})([KMGkmg]?)$")  # the template's `bitrate`: iperf3's -b, in units of 1000
_RATE_SCALE = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}


def omit_flag(ts: Mapping[str, Any]) -> list[str]:
    """PARAM_MISMATCH for a run with `-O N` (`test_start.omit`), whatever the params: its sums leave out its first N
    seconds (TCP's start, the ramp of a path), which the template, never passing -O, counts."""
    omit = ts.get("omit")
    if not isinstance(omit, int | float) or isinstance(omit, bool) or omit <= 0:
        return []
    return [f"PARAM_MISMATCH: omit: iperf3 left its first {omit:g} s out of its figures (-O {omit:g}); podtax's "
            "iperf3 counts the whole run from its start, so this throughput is of another cell"]


def amount_bound(ts: Mapping[str, Any]) -> str | None:
    """`52,428,800 bytes (-n)` or `10,000 blocks (-k)` when the run was bound by an amount instead of a time."""
    for key, option in (("bytes", "-n"), ("blocks", "-k")):
        value = ts.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return f"{value:,} {key} ({option})"
    return None


def amount_flag(requested: Mapping[str, Any] | None, amount: str | None, total: Mapping[str, Any]) -> list[str]:
    """PARAM_MISMATCH for a run bound by an amount (`-n`, `-k`), whatever the params (none: `podtax parse`): the
    template always runs for a time, so such a run measures another cell (as sysbench's `--rate`)."""
    if amount is None:
        return []
    took = total.get("seconds")
    over = f" in {took:.3g} s" if isinstance(took, int | float) and not isinstance(took, bool) else ""
    return [f"PARAM_MISMATCH: {amount.split()[1]}: iperf3 moved a set amount, {amount}{over}, instead of running for "
            f"a time (-t {(requested or {}).get('duration', 10)}, podtax's iperf3): its throughput is that of another, "
            "shorter kind of run (TCP's start weighs on it)"]


def bitrate_flag(requested: Mapping[str, Any] | None, ts: Mapping[str, Any]) -> list[str]:
    """PARAM_MISMATCH when the run's cap (`target_bitrate`: `-b`, or UDP's 1 Mbit/s when `-b` is not given) is not
    the requested `bitrate` (absent: the template's 0, unlimited, which it always passes as `-b`)."""
    target = ts.get("target_bitrate")
    if requested is None or not isinstance(target, int) or isinstance(target, bool):
        return []
    wanted = _RATE.match(str(requested.get("bitrate", "0")).strip())
    if wanted is None or int(wanted.group(1)) * _RATE_SCALE[wanted.group(2).upper()] == target:
        return []
    cap = f"a cap of {target:,} bit/s" if target else "no cap"
    return [f"PARAM_MISMATCH: bitrate: iperf3 ran with {cap} (-b; UDP sends 1 Mbit/s without it), "
            f"requested {requested.get('bitrate', '0 (unlimited)')}: its throughput is bounded by another cap"]
