"""The benchmark template registry: the ONLY things podtax ever executes.

A template has a name, validated parameters with bounds (a pydantic model that forbids unknown
keys), an argv builder (a list of strings, never a shell string), the tool it runs and the
metric the scheduler ranks nodes by. The host agent runs as root: an event can only name a
template and parameters, and anything that does not validate here is refused with a reason.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

Threads = int | Literal["all"]


def _check_threads(value: Threads) -> Threads:
    if value != "all" and not 1 <= int(value) <= 1024:
        raise ValueError("threads must be between 1 and 1024, or 'all'")
    return value


THREADS = Annotated[Threads, AfterValidator(_check_threads),
                    Field(description="Worker threads: 1..1024, or `all` hardware threads.")]
_SIZE_FORM = re.compile(r"[1-9][0-9]{0,6}[KMGT]?")


def _size(value: object) -> object:
    """A size as written: `4K`; `4k` (fio and sysbench read it the same) as `4K`; a YAML integer as its digits."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return value  # pydantic names the wrong type
    text = value[:-1] + value[-1:].upper()
    if not _SIZE_FORM.fullmatch(text):
        raise ValueError(f"{value[:40]!r} is not a size: write a whole number from 1 to 9999999, then optionally "
                         "K, M, G or T (binary multiples), e.g. 4K, 64M, 10G")
    return text


SIZE = Annotated[str, BeforeValidator(_size),
                 Field(pattern=r"^[1-9][0-9]{0,6}[KMGT]?$", description="Size like 1K, 1M, 10G.")]


def size_bytes(size: str) -> int:
    """A SIZE in bytes, binary multiples as sysbench and fio read them: `1K` -> 1024."""
    return int(size.rstrip("KMGT")) * 1024 ** max("_KMGT".find(size[-1]), 0)


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


def no_bool_for_number(model: type[BaseModel], value: object, info: ValidationInfo) -> object:
    """Refuse true/false for a number: pydantic reads them as 1 and 0 (`threads: true` ran 1 thread)."""
    if isinstance(value, bool) and info.field_name:
        annotation = model.model_fields[info.field_name].annotation
        kinds = get_args(annotation) or (annotation,)
        if bool not in kinds and (int in kinds or float in kinds):
            raise ValueError(f"{str(value).lower()} is a yes/no value, not a number (YAML reads true, false, yes, "
                             f"no, on and off as booleans): write a number")
    return value


class Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object, info: ValidationInfo) -> object:
        return no_bool_for_number(cls, value, info)

    def threads_value(self) -> int | None:
        value = getattr(self, "threads", None)
        return value if isinstance(value, int) else None


class SysbenchCpu(Params):
    threads: THREADS = 1
    max_prime: int = Field(10000, ge=3, le=10_000_000, description="--cpu-max-prime")
    events: int = Field(10000, ge=0, le=1_000_000_000, description="--events (0 = unlimited)")
    time: int = Field(60, ge=0, le=86400, description="--time seconds (0 = unlimited)")

    @model_validator(mode="after")
    def _bounded(self) -> SysbenchCpu:
        if self.events == 0 and self.time == 0:  # sysbench: "running an endless test"
            raise ValueError("events and time cannot both be 0 (unlimited): the run would never end")
        return self


class SysbenchMemory(Params):
    threads: THREADS = 1
    operation: Literal["read", "write", "none"] = "write"
    block_size: SIZE = "1K"
    total_size: SIZE = "100G"
    time: int = Field(10, ge=0, le=86400)

    @model_validator(mode="after")
    def _sizes(self) -> SysbenchMemory:
        block = size_bytes(self.block_size)
        if block < 8 or block & (block - 1):  # sysbench: "FATAL: Invalid value for memory-block-size"
            raise ValueError(f"block_size must be a power of two of at least 8 bytes, not {self.block_size}")
        if block > size_bytes(self.total_size):  # sysbench would run 0 operations
            raise ValueError(f"block_size {self.block_size} is larger than total_size {self.total_size}")
        return self


# What `stress-ng --cpu-method which` lists: stress-ng 0.15.06 (Debian 12, the version deploy/host and
# deploy/bench-image pin) on x86_64, in its order. Builds for other architectures list fewer (float80 is
# x86-only; float128 and the decimal methods depend on the compiler): such a name on, say, an arm node remains
# stress-ng's own bad-argument. Methods of a newer stress-ng are added here when the pin moves
# (tests/parsers/test_real_template_bounds.py compares this list with the installed stress-ng's).
StressNgCpuMethod = Literal[
    "all", "ackermann", "apery", "bitops", "callfunc", "cdouble", "cfloat", "clongdouble", "collatz",
    "correlate", "crc16", "decimal32", "decimal64", "decimal128", "dither", "div8", "div16", "div32",
    "div64", "div128", "double", "euler", "explog", "factorial", "fibonacci", "fft", "fletcher16", "float",
    "float32", "float64", "float80", "float128", "floatconversion", "gamma", "gcd", "gray", "hamming",
    "hanoi", "hyperbolic", "idct", "int128", "int64", "int32", "int16", "int8", "int128float",
    "int128double", "int128longdouble", "int128decimal32", "int128decimal64", "int128decimal128",
    "int64float", "int64double", "int64longdouble", "int32float", "int32double", "int32longdouble",
    "intconversion", "ipv4checksum", "jmp", "lfsr32", "ln2", "logmap", "longdouble", "loop", "matrixprod",
    "nsqrt", "omega", "parity", "phi", "pi", "prime", "psi", "queens", "rand", "rand48", "rgb", "sieve",
    "stats", "sqrt", "trig", "union", "zeta"
]


class StressNgCpu(Params):
    threads: THREADS = 1
    method: StressNgCpuMethod = Field("all", description="--cpu-method: `all` or one stress-ng method")
    ops: int = Field(0, ge=0, le=100_000_000, description="--cpu-ops (0 = until timeout; stress-ng's maximum)")
    timeout: int = Field(10, ge=1, le=86400, description="--timeout seconds")


class Hdparm(Params):
    mode: Literal["cached", "disk"] = "cached"
    device: str = Field("/dev/sda", pattern=r"^/dev/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")


class Fio(Params):
    rw: Literal["read", "write", "randread", "randwrite", "rw", "randrw"] = "randread"
    bs: SIZE = "4K"
    size: SIZE = "64M"
    iodepth: int = Field(16, ge=1, le=1024)
    direct: bool = True
    runtime: int = Field(10, ge=1, le=3600)

    @model_validator(mode="after")
    def _sizes(self) -> Fio:
        # below a sector O_DIRECT fails (EINVAL) and fio lays its file out in bs writes (1 byte: minutes)
        if size_bytes(self.bs) < 512:
            raise ValueError(f"bs must be at least 512 (one sector), not {self.bs}")
        if size_bytes(self.bs) > size_bytes(self.size):  # fio: "size too small, must not be less than ..."
            raise ValueError(f"bs {self.bs} is larger than size {self.size}")
        return self


# A server address: IPv4, IPv6 or a DNS name (the runner fills it from the topology).
_ADDRESS = r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f:]{2,39}|[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?)$"
ADDRESS = Annotated[str, Field(pattern=_ADDRESS,
                               description="Server address (IP or DNS name); the topology's server side.")]
PORT = Annotated[int, Field(ge=1024, le=65535, description="Server port (unprivileged).")]
NetTopology = Literal["pod->pod", "pod->pod-across-nodes", "pod->host"]
TOPOLOGY = Annotated[NetTopology, Field(description="Path of the pod side (the host side is always host->host): "
                                                    "where the runner starts the server (podtax.netbench).")]
LOOPBACK = ("127.0.0.1", "::1", "localhost")


class Iperf3(Params):
    """iperf3 client (`-J` JSON); the server side is started and stopped by the runner (podtax.netbench)."""

    server: ADDRESS = "127.0.0.1"
    port: PORT = 5201
    topology: TOPOLOGY = "pod->pod"
    protocol: Literal["tcp", "udp"] = "tcp"
    parallel: int = Field(1, ge=1, le=128, description="-P parallel streams")
    reverse: bool = Field(False, description="-R: the server sends, the client receives")
    duration: int = Field(10, ge=1, le=3600, description="-t seconds")
    length: int = Field(0, ge=0, le=1_048_576, description="-l bytes per write (0 = iperf3's default)")
    bitrate: str = Field("0", pattern=r"^(0|[1-9][0-9]{0,6}[KMG]?)$",
                         description="-b target bit/s (0 = unlimited; iperf3's UDP default is 1M)")

    @model_validator(mode="after")
    def _datagram(self) -> Iperf3:
        if self.protocol == "udp" and self.length and not 16 <= self.length <= 65507:  # iperf3's own bounds
            raise ValueError(f"length of a UDP datagram must be 16..65507 bytes (or 0), not {self.length}")
        return self


class Sockperf(Params):
    """sockperf ping-pong client, round-trip times (`--full-rtt`); the runner starts `sockperf server`."""

    server: str = Field("127.0.0.1", description="Server IP address: sockperf takes no name (IPv6 needs sockperf "
                                                   ">= 3.8; 3.7 refuses it as an invalid address).")
    port: PORT = 11111
    topology: TOPOLOGY = "pod->pod"
    protocol: Literal["tcp", "udp"] = "tcp"
    msg_size: int = Field(64, ge=14, le=65000, description="-m message size in bytes")
    duration: int = Field(10, ge=1, le=3600, description="-t seconds")
    rate: int = Field(0, ge=0, le=10_000_000, description="--mps messages per second (0 = max)")

    @model_validator(mode="after")
    def _usable(self) -> Sockperf:
        try:  # no IPv6 scope (`fe80::1%eth0`): ip_address admits any text after the `%`, and it reaches argv
            ipaddress.ip_address(self.server)
            if "%" in self.server:
                raise ValueError
        except ValueError:  # sockperf: "'-i' Invalid address: localhost"
            raise ValueError(f"server must be an IP address without a scope (sockperf resolves no name), "
                             f"not {self.server[:80]!r}") from None
        if self.rate and self.rate * self.duration < 10:  # sockperf: "No valid observations found"
            raise ValueError(f"rate x duration must be at least 10 messages (sockperf drops its first and "
                             f"last ones), not {self.rate} x {self.duration}")
        return self


QUANTITY = Annotated[str, Field(pattern=r"^[1-9][0-9]{0,6}(Ki|Mi|Gi|Ti|K|M|G|T)?$",
                                 description="Storage quantity like 1Gi, 500Mi, 10G.")]
DNS_NAME = r"^$|^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
DNS_LABEL = r"^$|^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
Observe = Literal["watch", "poll"]


class ControlPlane(Params):
    """Common parameters of the control-plane templates (docs/control-plane.md)."""

    count: int = Field(100, ge=1, le=10000, description="Objects created (and deleted) per run.")
    concurrency: int = Field(10, ge=1, le=1000, description="Client workers issuing requests.")
    namespace: str = Field("", pattern=DNS_LABEL, description="Namespace; empty = the runner's setting.")
    observe: Observe = Field("watch", description="`watch` (default) or `poll` (the seed's method, loads the API).")
    poll_interval_s: float = Field(1.0, ge=0.01, le=60, description="Interval of `observe: poll`.")


class VolumeChurn(ControlPlane):
    storage_class: str = Field("", pattern=DNS_NAME, description="Kubernetes StorageClass; empty = default.")
    plugin_id: str = Field("", pattern=r"^[A-Za-z0-9_.-]{0,128}$", description="Nomad CSI plugin id (nomad).")
    size: QUANTITY = "1Gi"
    access_mode: Literal["ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany", "ReadWriteMany"] = "ReadWriteOnce"
    consumer: bool = Field(False, description="A pod mounting each claim, timed until Running (kubernetes).")


class PodStartup(ControlPlane):
    count: int = Field(10, ge=1, le=10000, description="Pods created (and deleted) per run.")
    image: str = Field("registry.k8s.io/pause:3.9", pattern=r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$")
    with_volume: bool = Field(False, description="Each pod mounts a fresh claim.")
    storage_class: str = Field("", pattern=DNS_NAME, description="Class of the claims (with_volume).")
    size: QUANTITY = "1Gi"


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
    return ["fio", "--name=podtax", f"--rw={p.rw}", f"--bs={p.bs}", f"--size={p.size}",
            f"--iodepth={p.iodepth}", f"--direct={int(p.direct)}", f"--runtime={p.runtime}",
            "--ioengine=psync" if p.iodepth == 1 else "--ioengine=libaio",
            f"--filename={workdir.rstrip('/')}/podtax-fio.dat", "--output-format=json"]


def _with_local_server(test: str, p: Iperf3 | Sockperf, client: list[str]) -> list[str]:
    """A loopback server address means "start the server here too" (host->host): podtax.netpair starts
    it on loopback, runs the client and always stops the server. Any other address: the client alone
    (the runner started the server where the topology says)."""
    if p.server not in LOOPBACK:
        return client
    return [sys.executable, "-m", "podtax.netpair", "--test", test, "--port", str(p.port), "--protocol",
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

    def validate(self, raw: Mapping[str, Any]) -> Params:
        try:
            return self.params.model_validate(dict(raw))
        except ValidationError as exc:
            errs = exc.errors()
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {pydantic_msg(e['msg'])}" for e in errs)
            field = str(errs[0]["loc"][0]) if errs and errs[0]["loc"] else None
            raise TemplateError("invalid-params", f"{self.name}: {problems}", field) from None

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
                 "control plane: pod start-up latency, created -> scheduled -> started -> ready -> gone",
                 ("kubernetes",)),
    )
}


def get(name: str) -> Template:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise TemplateError("unknown-template", f"unknown test {name!r}; registered templates: {known}") from None


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
    """Parse `k=v k=v` (the import manifest's params column); numbers become ints."""
    out: dict[str, str | int] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ValueError(f"params must be space-separated key=value pairs, got {token!r}")
        out[key] = int(value) if value.isdigit() else value
    return out


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
