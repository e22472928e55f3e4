"""The benchmark template registry: the ONLY things podtax ever executes.

A template has a name, validated parameters with bounds (a pydantic model that forbids unknown
keys, in template_params.py), an argv builder (a list of strings, never a shell string), the tool
it runs and the metric the scheduler ranks nodes by. The host agent runs as root: an event can
only name a template and parameters, and anything that does not validate here is refused with a reason.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

# the parameter models are in template_params.py; every name stays importable from here
from podtax.template_params import (  # noqa: F401
    ADDRESS,
    DNS_LABEL,
    DNS_NAME,
    NO_QUOTED_NUMBERS,
    PORT,
    QUANTITY,
    SIZE,
    THREADS,
    TOPOLOGY,
    ControlPlane,
    Fio,
    Hdparm,
    Iperf3,
    NetTopology,
    Observe,
    Params,
    PodStartup,
    Sockperf,
    StressNgCpu,
    StressNgCpuMethod,
    SysbenchCpu,
    SysbenchMemory,
    Threads,
    VolumeChurn,
    no_bool_for_number,
    size_bytes,
)


class TemplateError(ValueError):
    """A run request that must be refused: unknown template or invalid parameters."""

    def __init__(self, reason: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.field = field  # the first parameter at fault, when one is


def pydantic_msg(msg: str) -> str:
    """A pydantic error message without the "Value error, " prefix that means nothing to a user."""
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


# Loopback as a campaign may name it: an address, not `localhost` (iperf3 -c localhost may try ::1 first while
# podtax.netpair binds 127.0.0.1)
LOOPBACK = ("127.0.0.1", "::1")


def _t(p: Params) -> str:
    return str(p.threads_value() or 1)


def _sysbench_cpu(p: SysbenchCpu, workdir: str) -> list[str]:
    return ["sysbench", "cpu", f"--cpu-max-prime={p.max_prime}", f"--events={p.events}",
            f"--time={p.time}", f"--threads={_t(p)}", "run"]


def _sysbench_memory(p: SysbenchMemory, workdir: str) -> list[str]:
    return ["sysbench", "memory", f"--memory-oper={p.operation}", f"--memory-block-size={p.block_size}",
            f"--memory-total-size={p.total_size}", f"--time={p.time}", f"--threads={_t(p)}", "run"]


def _stress_ng_cpu(p: StressNgCpu, workdir: str) -> list[str]:
    argv = ["stress-ng", "--cpu", _t(p), "--cpu-method", p.method, "--timeout", f"{p.timeout}s",
            "--metrics-brief"]
    if p.ops:
        argv += ["--cpu-ops", str(p.ops)]
    return argv


def _hdparm(p: Hdparm, workdir: str) -> list[str]:
    return ["hdparm", "-T" if p.mode == "cached" else "-t", p.device]


def _fio(p: Fio, workdir: str) -> list[str]:
    # --time_based: fio runs the whole runtime (over the file again and again), so every job direction is timed
    # at least 1 s; without it a size read in a few ms ended the run, its whole-ms runtime (rounded up) making its
    # IOPS and bandwidth too low (ROUNDED_RUNTIME), and runtime was only a cap
    return ["fio", "--name=podtax", f"--rw={p.rw}", f"--bs={p.bs}", f"--size={p.size}",
            f"--iodepth={p.iodepth}", f"--direct={int(p.direct)}", "--time_based", f"--runtime={p.runtime}",
            "--ioengine=psync" if p.iodepth == 1 else "--ioengine=libaio",
            f"--filename={workdir.rstrip('/')}/podtax-fio.dat", "--output-format=json"]


def _with_local_server(test: str, p: Iperf3 | Sockperf, client: list[str]) -> list[str]:
    """A loopback server address means "start the server here too" (host->host): podtax.netpair starts
    it on loopback, runs the client and always stops the server. Any other address: the client alone
    (the runner started the server where the topology says)."""
    if p.server not in LOOPBACK:
        return client
    # -I: run from the work directory, `-m` would import a module found there first, and read PYTHON* variables
    return [sys.executable, "-I", "-m", "podtax.netpair", "--test", test, "--port", str(p.port), "--protocol",
            p.protocol, "--bind", "::1" if p.server == "::1" else "127.0.0.1", "--", *client]


def _iperf3(p: Iperf3, workdir: str) -> list[str]:
    argv = ["iperf3", "-c", p.server, "-p", str(p.port), "-t", str(p.duration), "-P", str(p.parallel),
            "-b", p.bitrate, "-J"]
    if p.protocol == "udp":
        argv.append("-u")
    if p.reverse:
        argv.append("-R")
    if p.length:
        argv += ["-l", str(p.length)]
    return _with_local_server("iperf3", p, argv)


def _sockperf(p: Sockperf, workdir: str) -> list[str]:
    argv = ["sockperf", "ping-pong", "-i", p.server, "-p", str(p.port), "-t", str(p.duration),
            "-m", str(p.msg_size), "--mps", str(p.rate) if p.rate else "max", "--full-rtt"]
    return _with_local_server("sockperf", p, argv + (["--tcp"] if p.protocol == "tcp" else []))


def _sysbench_memory_primary(p: Params) -> str:
    """`--memory-oper=none` moves no memory: its figure is operations per second (the loop's overhead)."""
    return "operations_per_second" if getattr(p, "operation", "write") == "none" else "mib_per_second"


def _fio_primary(p: Params) -> str:
    rw = getattr(p, "rw", "read")
    return "write_iops" if rw in ("write", "randwrite") else "read_iops"


@dataclass(frozen=True)
class Template:
    name: str
    tool: str
    params: type[Params]
    argv: Callable[[Any, str], list[str]] | None
    version_argv: tuple[str, ...]
    primary_metric: Callable[[Params], str]
    description: str
    environments: tuple[str, ...] = ("host", "kubernetes")

    @property
    def control_plane(self) -> bool:
        """Timed against a cluster's API by the runner, not run as a process."""
        return self.argv is None

    @property
    def host_executable(self) -> bool:
        return self.argv is not None

    def validate(self, raw: Mapping[str, Any], context: dict[str, Any] | None = None) -> Params:
        """The parameters checked; `context` NO_QUOTED_NUMBERS (a campaign file) refuses a number written as text."""
        try:
            return self.params.model_validate(dict(raw), context=context)
        except ValidationError as exc:
            errs = exc.errors()
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {pydantic_msg(e['msg'])}" for e in errs)
            field = str(errs[0]["loc"][0]) if errs and errs[0]["loc"] else None
            raise TemplateError("invalid-params", f"{self.name}: {problems}", field) from None

    def remote_server(self, params: Mapping[str, Any]) -> str | None:
        """Where this network test's client would connect when that is not this machine's loopback (None for
        loopback, or a test without a server). Only the runner aims a client elsewhere: a pod side's, at the
        server pod it started; the host side runs host->host on loopback (podtax.netpair)."""
        if "server" not in self.params.model_fields or params.get("server") is None:
            return None
        server = str(params["server"])
        return None if server in LOOPBACK else server

    def build_argv(self, raw: Mapping[str, Any], workdir: str = "/tmp") -> list[str]:
        params = self.validate(raw)
        if self.argv is None:
            raise TemplateError("not-host-executable", f"{self.name} is run by the runner, not on a host")
        if getattr(params, "threads", None) == "all":
            raise TemplateError("unresolved-threads", f"{self.name}: threads=all must be resolved when planned")
        return self.argv(params, workdir)


def _const(name: str) -> Callable[[Params], str]:
    return lambda _p: name


REGISTRY: dict[str, Template] = {
    t.name: t
    for t in (
        Template("sysbench-cpu", "sysbench", SysbenchCpu, _sysbench_cpu, ("sysbench", "--version"),
                 _const("events_per_second"), "sysbench cpu: prime verification, events per second"),
        Template("sysbench-memory", "sysbench", SysbenchMemory, _sysbench_memory, ("sysbench", "--version"),
                 _sysbench_memory_primary, "sysbench memory: block reads or writes, MiB per second"),
        Template("stress-ng-cpu", "stress-ng", StressNgCpu, _stress_ng_cpu, ("stress-ng", "--version"),
                 _const("bogo_ops_per_second_real"), "stress-ng cpu stressor: bogo ops per second"),
        Template("hdparm", "hdparm", Hdparm, _hdparm, ("hdparm", "-V"),
                 _const("read_mb_per_second"), "hdparm -T (cached) or -t (buffered disk) reads"),
        Template("fio", "fio", Fio, _fio, ("fio", "--version"), _fio_primary, "fio: bandwidth, IOPS, latency"),
        Template("iperf3", "iperf3", Iperf3, _iperf3, ("iperf3", "--version"), _const("throughput_mbps"),
                 "iperf3: TCP or UDP throughput to a server the runner starts, Mbit/s"),
        Template("sockperf", "sockperf", Sockperf, _sockperf, ("sockperf", "--version"), _const("rtt_p50_us"),
                 "sockperf ping-pong: request-response round-trip time percentiles, µs"),
        Template("volume-churn", "volume-churn", VolumeChurn, None, (), _const("provisioned_makespan_s"),
                 "control plane: create, bind and delete volumes (Kubernetes PVCs or Nomad CSI)",
                 ("kubernetes", "nomad")),
        Template("pod-startup", "pod-startup", PodStartup, None, (), _const("ready_p50_ms"),
                 "control plane: pod start-up latency, created -> scheduled -> initialized -> started -> "
                 "containers ready -> ready -> gone",
                 ("kubernetes",)),
    )
}


def get(name: str) -> Template:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        close = difflib.get_close_matches(name, REGISTRY, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TemplateError("unknown-template", f"unknown test {name!r}{hint}; registered templates: {known}") from None


def resolve_threads(raw: Mapping[str, Any], hw_threads: int) -> dict[str, Any]:
    """Replace `threads: all` with the node's hardware thread count (same for host and pod)."""
    out = dict(raw)
    if out.get("threads") == "all":
        out["threads"] = hw_threads
    return out


def params_key(params: Mapping[str, Any]) -> str:
    """Canonical, order-independent text of parameters: `max_prime=100000 threads=1`."""
    # cached: a campaign repeats each cell's parameters on thousands of runs. The type is part of the
    # cache key, since True == 1 == 1.0 as keys but they print as `true`, `1` and `1.0`
    items = tuple((k, type(v), v) for k, v in sorted(params.items()))
    try:
        return _params_key(items)
    except TypeError:  # an unhashable value (a list): not cached
        return _params_key.__wrapped__(items)


@lru_cache(maxsize=4096)
def _params_key(items: tuple[tuple[str, type, Any], ...]) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, _, v in items)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def parse_params(text: str) -> dict[str, str | int]:
    """Parse `k=v k=v` (the import manifest's params column); numbers become ints. A key given twice is refused
    (the last one was kept without a word)."""
    out: dict[str, str | int] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if not sep or not key or "=" in value:  # `threads=1;max_prime=20000`: another separator
            raise ValueError(f"params are space-separated key=value pairs (threads=1 max_prime=20000), got {token!r}")
        if key in out:
            raise ValueError(f"{key} is given twice ({key}={_fmt(out[key])} and {token}): keep one")
        out[key] = _number(value)
    return out


def _number(value: str) -> str | int:
    """`value` as an int when written in ASCII digits that int() converts (up to 4,300 of them), else as it is, for
    the template's check to name: int() of '²' or of 5,000 digits raised a ValueError naming a Python setting."""
    if value.isascii() and value.isdigit():
        try:
            return int(value)
        except ValueError:
            return value
    return value


def is_primary_metric(test: str, params: str, metric: str) -> bool:
    """Whether `metric` is the test's headline metric for these parameters (`k=v k=v` text)."""
    template = REGISTRY.get(test)
    if template is None:
        return False
    try:
        raw = parse_params(params)
    except ValueError:
        return False
    try:
        parsed = template.validate(raw)
    except TemplateError:
        parsed = template.params.model_construct(**raw)
    try:
        return template.primary_metric(parsed) == metric
    except Exception:  # noqa: BLE001 - a template that cannot name its metric has no primary one here
        return False


# Metrics whose value is set rather than measured: (test, metric) -> SetBy. A run stops at the first limit it
# reaches: a count (sysbench --events, sysbench memory --memory-total-size, stress-ng --cpu-ops) or a time
# (--time, --timeout; 0 is no limit). The count sets its count metric when no run stopped at the time first (the
# parsers flag such a run SHORT; with every run SHORT the count is a throughput); sysbench memory flags no run
# SHORT, so its counts are set only with time=0. The time sets the elapsed-time metric when every run lasted it
# (a run a count stopped ends before it), or when the count is 0. hdparm times its reads over a window of its own
# (2 s cached, 3 s disk; 0.5 s cached in 5.x) and reports the MB read in it: its seconds are the window's.
@dataclass(frozen=True)
class SetBy:
    param: str | None  # the parameter that sets the metric; None: the tool itself (`tool`)
    kind: str  # "count", "time" or "tool"
    other: str | None = None  # count: a time limit that must be given as 0; time: the count whose 0 lets it run
    tool: str = ""  # kind "tool": what sets the metric, as the sentence names it


SET_BY_PARAMS: dict[tuple[str, str], SetBy] = {
    ("sysbench-cpu", "events"): SetBy("events", "count"),
    ("sysbench-cpu", "total_time"): SetBy("time", "time", "events"),
    ("sysbench-memory", "events"): SetBy("total_size", "count", "time"),
    ("sysbench-memory", "operations"): SetBy("total_size", "count", "time"),
    ("sysbench-memory", "mib_transferred"): SetBy("total_size", "count", "time"),
    ("sysbench-memory", "total_time"): SetBy("time", "time"),
    ("stress-ng-cpu", "bogo_ops"): SetBy("ops", "count"),
    ("stress-ng-cpu", "real_time"): SetBy("timeout", "time", "ops"),
    **{("hdparm", f"{kind}_read_time"): SetBy(None, "tool", tool="hdparm's timing window")
       for kind in ("cached", "disk", "direct_cached", "direct_disk")},
}


@dataclass(frozen=True)
class Fixed:
    """What sets a metric (`by`: "the parameters" or the tool's own rule) and how, as a clause."""

    by: str
    how: str


def set_by_params(test: str, params: str, metric: str, values: Sequence[float] = (), n_short: int = 0) -> Fixed | None:
    """What sets `metric` in every run of a cell rather than the runs measuring it, or None. `params`: the cell's
    `k=v k=v` as requested (an import manifest's row names only those it gives); `values`: every run's value,
    both sides; `n_short`: the runs flagged SHORT (stopped at their time limit before their count)."""
    rule = SET_BY_PARAMS.get((test, metric))
    if rule is None:
        return None
    if rule.kind == "tool":
        return Fixed(rule.tool, f"{test} times its reads over a fixed window and reports what it read in it: "
                                f"{metric} is the window's length")
    try:
        given = parse_params(params)
    except ValueError:
        return None
    value, other = given.get(rule.param or ""), given.get(rule.other or "")
    if rule.kind == "time":
        if not isinstance(value, int) or value <= 0 or not values:
            return None
        if other == 0:
            return Fixed("the parameters", f"{rule.other}=0 {rule.param}={value}: every run lasts its time limit, "
                                           f"which fixes {metric}")
        if all(v >= value for v in values):
            return Fixed("the parameters", f"{rule.param}={value} fixes {metric}: every run lasted its time limit")
        return None
    if n_short:  # a run stopped at its time limit first: the count is (partly) a throughput
        return None
    if value not in (None, 0, "0") and (rule.other is None or other == 0):
        both = f" {rule.other}=0" if rule.other else ""
        return Fixed("the parameters", f"{rule.param}={value}{both} fixes {metric} in every run that did its work")
    if value in (0, "0"):  # the params name no count limit: the runs' count is a throughput, however alike
        return None
    if len(values) > 1 and len(set(values)) == 1:  # the manifest does not say, yet every run counted the same
        return Fixed("the parameters", f"every run counted the same {metric}, {values[0]:g}: a count limit "
                                       f"({rule.param}) stopped them, though the params do not say so")
    return None
