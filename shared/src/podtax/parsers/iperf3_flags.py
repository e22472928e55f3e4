"""The flags of an iperf3 run against what podtax's iperf3 template runs (pure functions, moved from iperf3.py):
a cap other than the requested bitrate, a run bound by an amount instead of a time, omitted seconds (-O), and the
server's lag counted into the receiver's time before 3.10 (SERVER_LAG)."""

from __future__ import annotations

import math
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


def _positive(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def server_lag(before_3_10: bool, ts: Mapping[str, Any], received: Mapping[str, Any],
               sent: Mapping[str, Any]) -> tuple[str, float, str] | None:
    """A run of iperf3 before 3.10 whose server counted more time than the client: the metric to correct
    (`throughput_mbps` forward, where the server receives; `sent_mbps` with -R, where it sends), the server's bytes
    over the client's time (Mbit/s) and the SERVER_LAG flag; else None. Until 3.10 the server stopped its clock only
    once the client's end-of-test message came through (control messages without TCP_NODELAY), 40-60 ms after the
    last byte (3.5 -t 1: receiver 1.0436 s against the sender's 1.0003 s; with -R sender 1.0493 s against the
    receiver's 1.0026 s; every byte but in-flight ones moved within the client's time): its rate was 4.2-4.7% low at
    -t 1, 0.5% at -t 10. --bidir (3.7+) times both directions at the server's end: left as printed. So is a run
    bound by bytes or blocks (-n, -k): its sender's time is only the writes into the socket buffer (3.7 -n 2M: 1.6 ms
    against the receiver's 40.9 ms), no time of the transfer; and one with --omit, or whose receiver counted more bytes
    than were sent (3.7 -t 2 -O 1: 2.1% more; the omitted seconds' bytes), its bytes not those of the client's time."""
    if not before_3_10 or any(ts.get(key) for key in ("bidir", "bytes", "blocks", "omit")):
        return None
    received_bytes, sent_bytes = _positive(received.get("bytes")), _positive(sent.get("bytes"))
    if received_bytes is None or sent_bytes is None or received_bytes > sent_bytes:
        return None
    reverse = bool(ts.get("reverse"))
    server, client = (sent, received) if reverse else (received, sent)
    moved, took, right = (_positive(server.get("bytes")), _positive(server.get("seconds")),
                          _positive(client.get("seconds")))
    if moved is None or took is None or right is None or took <= right:
        return None
    rate = moved * 8 / right / 1e6
    printed = server.get("bits_per_second")
    said = f"{printed / 1e6:.6g} Mbit/s, " if _positive(printed) else ""
    side, other, metric, verb = (("sender", "receiver", "sent_mbps", "sent") if reverse
                                 else ("receiver", "sender", "throughput_mbps", "received"))
    return metric, rate, (f"SERVER_LAG: iperf3 before 3.10 counts its server's wait for the end-of-test message into "
                          f"the {side}'s time ({took:.4f} s against the {other}'s {right:.4f} s); {metric} is the "
                          f"bytes {verb} over the {other}'s time, {rate:.6g} Mbit/s (iperf3 printed {said}"
                          f"{100 * (1 - right / took):.1f}% lower)")
