"""The parameter models of the benchmark templates (podtax.templates registers them): one pydantic model
per template, frozen and forbidding unknown keys, whose fields are the only parameters a run can have, each
with its bounds, and the annotated types they share (THREADS, SIZE, ADDRESS, PORT, QUANTITY...).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
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


# Validation context of a campaign file: a number written as text ('120') is refused. Import manifests hold
# text, so their params reach the same models as strings and pydantic reads '120' as 120 there.
NO_QUOTED_NUMBERS = {"no_quoted_numbers": True}


def no_bool_for_number(model: type[BaseModel], value: object, info: ValidationInfo) -> object:
    """Refuse true/false for a number: pydantic reads them as 1 and 0 (`threads: true` ran 1 thread). With
    the NO_QUOTED_NUMBERS context, refuse a number written as text too (`timeout: '120'`)."""
    if not isinstance(value, bool | str) or not info.field_name:
        return value
    annotation = model.model_fields[info.field_name].annotation
    kinds = get_args(annotation) or (annotation,)
    if bool in kinds or not (int in kinds or float in kinds):
        return value
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a yes/no value, not a number (YAML reads true, false, yes, "
                         f"no, on and off as booleans): write a number")
    if str not in kinds and (info.context or {}).get("no_quoted_numbers") and _number_text(value):
        raise ValueError(f"{value!r} is quoted, so it is text: write {value.strip()}, not {value!r}")
    return value


def _number_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


class Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_bool(cls, value: object, info: ValidationInfo) -> object:
        return no_bool_for_number(cls, value, info)

    def threads_value(self) -> int | None:
        value = getattr(self, "threads", None)
        return value if isinstance(value, int) else None

    @classmethod
    def new_campaign_problem(cls, given: Mapping[str, Any]) -> tuple[str, str] | None:
        """(parameter, why) when a NEW campaign must not ask for these params, though a run of them stays valid
        (it ran, or was planned, before the rule): checked where a campaign is submitted, nowhere else."""
        return None


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
    timeout: int = Field(10, ge=1, le=86400, description="--timeout seconds: with ops 0 each run lasts this long, so "
                                                         "keep it below the campaign's timeout")


class Hdparm(Params):
    mode: Literal["cached", "disk"] = "cached"
    device: str = Field("/dev/sda", pattern=r"^/dev/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")


class Fio(Params):
    rw: Literal["read", "write", "randread", "randwrite", "rw", "randrw"] = "randread"
    bs: SIZE = "4K"
    size: SIZE = Field("64M", description="The data file's size: the region read or written, again and again "
                                         "until runtime ends")
    iodepth: int = Field(16, ge=1, le=1024)
    direct: bool = True
    # whole seconds, at least 1: fio times each direction in whole ms rounded up, so 1 s keeps that error at 0.1%
    runtime: int = Field(10, ge=1, le=3600, description="Seconds fio runs (--time_based): each run lasts this long "
                                                         "whatever the size, so keep it below the campaign's timeout "
                                                         "less its start-up (at least 30 s)")

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
                               description="Server address (IP or DNS name): podtax sets it (the server pod the "
                                           "runner starts; loopback on the host side). A campaign may give only "
                                           "127.0.0.1 or ::1.")]
PORT = Annotated[int, Field(ge=1024, le=65535, description="Server port (unprivileged).")]
NetTopology = Literal["pod->pod", "pod->pod-across-nodes", "pod->host"]
TOPOLOGY = Annotated[NetTopology, Field(description="Path of the pod side (the host side is always host->host): "
                                                    "where the runner starts the server (podtax.netbench).")]


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
                         description="-b target bit/s (0 = unlimited; a new UDP campaign names one: 0 floods, "
                                     "iperf3's own UDP default is 1M)")

    @model_validator(mode="after")
    def _datagram(self) -> Iperf3:
        if self.protocol == "udp" and self.length and not 16 <= self.length <= 65507:  # iperf3's own bounds
            raise ValueError(f"length of a UDP datagram must be 16..65507 bytes (or 0), not {self.length}")
        return self

    @classmethod
    def new_campaign_problem(cls, given: Mapping[str, Any]) -> tuple[str, str] | None:
        """UDP without a bitrate: refused in a new campaign only (podtax.campaign); a run, log or stored campaign
        without one ran, or was planned, at -b 0 and stays so (its params re-read anywhere else validate)."""
        return ("protocol", UDP_BITRATE) if given.get("protocol") == "udp" and "bitrate" not in given else None


# UDP has no congestion control: at the default bitrate 0 (unlimited) iperf3's sender floods and the receiver drops
# most datagrams (loopback, iperf3 3.12, 3 runs: 49-53 Gbit/s sent, 4.2-6.2 received, 88-91 % lost; at 100M none
# lost), so throughput_mbps measured drops, not the network, and a pod-vs-host ratio of such runs the two sides'
# drops. A new campaign's UDP test names its rate; an explicit 0 is taken as asked. Runs, logs and campaigns from
# before keep an absent bitrate as the 0 they ran at (test_iperf3_udp_bitrate).
UDP_BITRATE = ("protocol udp needs a bitrate (iperf3 -b, bit/s): at the default 0 (unlimited) the sender floods and "
               "the receiver drops most datagrams (88-91 % on loopback), so throughput_mbps would measure drops, not "
               "the network; give a rate the path carries (e.g. 100M, raised while lost_percent stays near 0), or 0 "
               "to flood on purpose")


class Sockperf(Params):
    """sockperf ping-pong client, round-trip times (`--full-rtt`); the runner starts `sockperf server`."""

    server: str = Field("127.0.0.1", description="Server IP address, set by podtax as iperf3's (a campaign may "
                                                   "give only 127.0.0.1 or ::1): sockperf takes no name (IPv6 needs "
                                                   "sockperf >= 3.8; 3.7 refuses it as an invalid address).")
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


# The parameter that sets how long a run of a template lasts, when it does (a run bound by time alone)
RUN_LENGTH = {"fio": ("runtime", None), "iperf3": ("duration", None), "sockperf": ("duration", None),
           "stress-ng-cpu": ("timeout", "ops"), "sysbench-cpu": ("time", "events")}


def run_length(test: str, params: dict[str, Any]) -> tuple[str, int] | None:
    """(parameter, seconds) a run of `test` with these validated params lasts at least: fio runs --time_based, a
    stress-ng run of ops 0 its timeout, a sysbench cpu run of events 0 its time; None when another bound may end it
    sooner (ops, events, sysbench memory's total_size) or the template has no such parameter."""
    name, other = RUN_LENGTH.get(test, ("", None))
    seconds = params.get(name)
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds <= 0 or (other and params.get(other)):
        return None
    return name, seconds


# What a run's timeout must hold besides the benchmark's own length: the Job's activeDeadlineSeconds (whole seconds)
# counts scheduling, image pull, container start and fio's file lay-out, and the host side times the whole process
MIN_START_SLACK_S = 30.0
START_SLACK_SHARE = 0.1


def start_slack(timeout: float) -> float:
    """Seconds a run's timeout keeps for start-up: the larger of 30 s and 10% of the timeout."""
    return max(MIN_START_SLACK_S, START_SLACK_SHARE * timeout)


def fits(seconds: float, timeout: float) -> bool:
    return seconds + start_slack(timeout) < timeout


def length_problem(test: str, name: str, seconds: int, timeout: float, max_timeout: float) -> str | None:
    """One line when a run of `seconds` (its parameter `name`) leaves its timeout no more than the start-up slack;
    the fix names the smallest whole timeout that fits (when allowed) and the largest length that fits this one."""
    if fits(seconds, timeout):
        return None
    low = math.ceil(max(seconds + MIN_START_SLACK_S, seconds / (1 - START_SLACK_SHARE)))
    need = next(t for t in range(low, low + 3) if fits(seconds, t))
    most = math.ceil(timeout - start_slack(timeout)) - 1
    fixes = [f"raise the campaign's timeout to {need} s or more"] if need <= max_timeout else []
    if most >= 1 or not fixes:
        fixes.append(f"lower the test's {name} to at most {most} s" if most >= 1 else f"lower the test's {name}")
    killed = "its runs would be killed" if seconds >= timeout else "on a slow start its runs may be killed"
    return (f"{test} runs {name}={seconds} s, but the campaign's timeout ({timeout:g} s) must also hold the run's "
            f"start-up (scheduling, image pull, container start, fio's file lay-out), more than "
            f"{start_slack(timeout):g} s (the larger of {MIN_START_SLACK_S:g} s and {START_SLACK_SHARE:.0%} of "
            f"the timeout): {killed} before they end; {', or '.join(fixes)}")
