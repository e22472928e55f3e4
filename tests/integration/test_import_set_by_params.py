"""Metrics set rather than measured, beyond sysbench's `--events` (test_import_fixed_events.py): stress-ng's bogo
ops under `--cpu-ops`, the elapsed time under `--time` / `--timeout` (sysbench cpu with events=0, sysbench memory,
and runs that all stopped at their time limit), hdparm's read seconds (its own timing window), and an event count
an import manifest leaves out but that every run counted alike. Each read "no detectable difference" (95% CI 1.000
to 1.000) before; each is now "set by the parameters" with a sentence naming what sets it, and no note that its
own verdict "is corrected among secondary metrics". Runs that all stopped at `--time` before their `--events` (SHORT)
counted a throughput: their events keep a verdict. Planted logs (corpus logs with their numbers edited) through the
real `podtax import`, a real nats-server, the parser and analyzer, and the real CLI's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.importing import cli as _cli
from tests.integration.importing import imported, paired_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RUNS = 10  # a side
SET = "set by the parameters"


def _sub(name: str, subs: dict[str, str]) -> str:
    text = (CORPUS / name).read_text()
    return re.sub("|".join(map(re.escape, subs)), lambda m: subs[m.group(0)], text)


def cpu(rate: float, events: int, time_limit: float | None = None) -> str:
    """The sysbench cpu corpus log (200 events at 183.01/s) at another rate; `time_limit`: the run stopped there."""
    total = events / rate if time_limit is None else time_limit + 0.0003
    avg = 1000 / rate
    return _sub("debian12-x86_64/sysbench-cpu-prime100000-1t.log", {
        "183.01": f"{rate:.2f}", "1.0916s": f"{total:.4f}s",
        "events:              200": f"events:              {events}",
        "5.42": f"{avg * 0.99:.2f}", "5.45": f"{avg:.2f}", "5.71": f"{avg * 1.05:.2f}", "5.47": f"{avg * 1.01:.2f}",
        "1090.64": f"{total * 999:.2f}", "200.0000/0.00": f"{events:.4f}/0.00",
        "1.0906/0.00": f"{total * 0.999:.4f}/0.00"})


def memory(mibs: float, t: float = 3.0) -> str:
    """The sysbench memory corpus log (3 s) at another MiB/s."""
    ops = int(mibs * 1024 * t)
    return _sub("debian12-x86_64/sysbench-memory-write-1t.log", {
        "21672955 (7222554.38 per second)": f"{ops} ({ops / t:.2f} per second)",
        "21165.00 MiB transferred (7053.28 MiB/sec)": f"{ops / 1024:.2f} MiB transferred ({mibs:.2f} MiB/sec)",
        "3.0001s": f"{t + 0.0001:.4f}s", "total number of events:              21672955":
        f"total number of events:              {ops}", "21672955.0000/0.00": f"{ops:.4f}/0.00"})


def stress(rate: float, ops: int = 3000) -> str:
    """The stress-ng corpus log (--cpu-ops 3000) at another bogo ops/s."""
    rt = ops / rate
    return _sub("debian12-x86_64/stress-ng-cpu-1-ops3000-brief.log", {
        "3000      1.69      1.69      0.00      1770.62        1770.72":
        f"{ops}      {rt:.2f}      {rt:.2f}      0.00      {rate:.2f}        {rate + 0.1:.2f}",
        "completed in 1.70s": f"completed in {rt + 0.01:.2f}s"})


def hdparm(mbs: float, cached: float) -> str:
    """The hdparm corpus log (cached reads over 2 s, disk reads over 3 s) at other MB/s."""
    return _sub("hdparm/tinkerboard/hdparm.txt", {
        "1532 MB in  2.00 seconds = 766.33": f"{int(cached * 2)} MB in  2.00 seconds = {cached:.2f}",
        "38 MB in  3.04 seconds =  12.48": f"{int(mbs * 3.02)} MB in  3.02 seconds =  {mbs:.2f}"})


def _jitter(i: int) -> float:
    return 1 + 0.002 * ((i * 7) % 5 - 2)  # -0.4% .. +0.4%, differs run to run


CPU = "threads=1 max_prime=100000"
SNG = '"stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.1.0-18-amd64)"'
# campaign: (test, params, tool_version, log of a run at a host/pod speed factor, {metric: what the sentence says,
# None for a metric that keeps a verdict})
CASES = {
    "sngops": ("stress-ng-cpu", "threads=1 ops=3000", SNG, lambda f: stress(1770.0 * f),
               {"bogo_ops": "Set by the parameters: ops=3000 fixes bogo_ops", "real_time": None}),
    "evtime": ("sysbench-cpu", f"{CPU} events=0 time=10", "", lambda f: cpu(183.0 * f, round(1830 * f), 10),
               {"total_time": "Set by the parameters: events=0 time=10", "events": None}),
    "memt": ("sysbench-memory", "threads=1 block_size=1K total_size=100G operation=write time=3", "",
             lambda f: memory(7050.0 * f), {"total_time": "Set by the parameters: time=3 fixes total_time",
                                            "operations": None}),
    "hdp": ("hdparm", "mode=disk device=/dev/sda1", "hdparm v9.65", lambda f: hdparm(12.48 * f, 766.0 * f),
            {"disk_read_time": "Set by hdparm's timing window: hdparm times its reads over a fixed window",
             "cached_read_time": "Set by hdparm's timing window", "disk_read_mb_per_second": None}),
    "evshort": ("sysbench-cpu", f"{CPU} events=100000 time=10", "", lambda f: cpu(183.0 * f, round(1830 * f), 10),
                {"events": None, "total_time": "Set by the parameters: time=10 fixes total_time"}),
    "evnop": ("sysbench-cpu", CPU, "", lambda f: cpu(183.0 * f, 200),
              {"events": "Set by the parameters: every run counted the same events, 200"}),
}


def manifest(folder: Path, name: str) -> Path:
    """RUNS host logs and RUNS pod logs 7% slower, interleaved an hour apart, each campaign in a month of its own."""
    test, params, tool, log, _ = CASES[name]

    def planted(env: str, i: int) -> str:
        return log(1.0 * _jitter(i) if env == "host" else 0.93 * _jitter(i + 1))

    # the campaigns never overlap on the node
    return paired_manifest(folder, name, test=test, params=params, month=1 + list(CASES).index(name), runs=RUNS,
                           log=planted, tool=tool)


async def test_metrics_the_limits_or_the_tool_set_get_no_verdict(nats_url: str, tmp_path: Path, capsys,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODTAX_NATS_URL", nats_url)
    async with imported(nats_url, tmp_path, {name: manifest(tmp_path, name) for name in CASES}) as url:
        for name, (*_, want) in CASES.items():
            capsys.readouterr()
            assert await _cli("report", name, "--api", url, "--json") == 0
            cells = {c["metric"]: c for c in json.loads(capsys.readouterr().out)["cells"]}
            for metric, said in want.items():
                c = cells[metric]
                if said is None:
                    assert c["verdict"] != SET, (name, metric, c["sentence"])
                    continue
                assert (c["verdict"], c["ratio"], c["p_value"]) == (SET, None, None), (name, metric, c["sentence"])
                assert c["sentence"].startswith(said), (name, metric, c["sentence"])
                assert "corrected among secondary metrics" not in c["sentence"], (name, metric, c["sentence"])
