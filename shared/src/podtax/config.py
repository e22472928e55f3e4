"""One pydantic-settings class per service, read from `PODTAX_*` environment variables.

Bad configuration fails at start-up with a message naming the variable to fix:
``PODTAX_ANALYZER_PORT=abc`` -> "PODTAX_ANALYZER_PORT: Input should be a valid integer ...".
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import urllib.parse
import uuid
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from podtax.templates import pydantic_msg

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
CLUSTER_PATTERN = r"^[A-Za-z0-9_-]{1,63}$"  # PODTAX_CLUSTER, as `podtax scores --cluster` checks it too


def redact(url: str) -> str:
    """A URL list without its secrets: nats://user:secret@host -> nats://user:***@host, and a token given as the
    user (nats://token@host) -> nats://***@host. The user part ends at the last `@` before the path; without a
    scheme (user:secret@host, nats//user:secret@host: the commonest mistake) at the last `@`."""
    def one(u: str) -> str:
        scheme, sep, rest = u.partition("://")
        netloc, slash, path = rest.partition("/") if sep else (u, "", "")
        userinfo, at, host = netloc.rpartition("@")
        if not at:
            return u
        user, colon, _ = userinfo.partition(":")
        return f"{scheme + sep if sep else ''}{user + ':' if colon else ''}***@{host}{slash}{path}"

    return ",".join(one(u) for u in url.split(","))


class ConfigError(SystemExit):
    """Raised when a setting is invalid; exits with status 2. `problems`: one line each (`line` joins them)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(2)
        self.message = message
        self.problems = problems or [" ".join(message.split())]

    def __str__(self) -> str:
        return self.message

    @property
    def line(self) -> str:
        """The message on one line, for a command's single line of error."""
        return "invalid configuration: " + "; ".join(self.problems) if len(self.problems) > 1 else self.problems[0]


# settings whose empty value has a documented meaning; any other set to "" or blanks is refused at start-up
# (a PODTAX_AGENT_WORKDIR="" ran benchmarks in the current folder, PODTAX_ANALYZER_HOST="" served on every address)
EMPTY_MEANS = frozenset({"analyzer_allowed_hosts", "scheduler_namespaces", "runner_nomad_region", "runner_nomad_token"})


class Common(BaseSettings):
    # allow_inf_nan=False: PODTAX_NATS_STREAM_MAX_AGE_S=inf and the like passed `ge=0` and failed once running
    model_config = SettingsConfigDict(env_prefix="PODTAX_", extra="ignore", frozen=True, allow_inf_nan=False)

    nats_url: str = Field(DEFAULT_NATS_URL, description="NATS server URL(s), comma-separated.")
    cluster: str = Field("local", pattern=CLUSTER_PATTERN, description="Name of this cluster.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="DEBUG, INFO, WARNING, ERROR.")
    log_format: Literal["json", "text"] = Field("json", description="Log lines as json or text.")
    otel_exporter: Literal["none", "console", "otlp"] = Field(
        "none", description="OpenTelemetry trace exporter; otlp reads OTEL_EXPORTER_OTLP_ENDPOINT.")
    max_deliver: int = Field(5, ge=1, le=100, description="Deliveries before a message is dead-lettered.")
    health_port: int = Field(0, ge=0, le=65535,
                             description="Serve GET /healthz, /readyz and /metrics on this port (0 = off).")
    health_host: str = Field("127.0.0.1", min_length=1, description="Address the health port (and the scheduler's "
                             "metrics port) listens on: loopback unless set; the images set 0.0.0.0 (probes). One "
                             "it cannot listen on stops the service at start (exit 2).")
    nats_user: str | None = Field(None, min_length=1, description="NATS user (with PODTAX_NATS_PASSWORD).")
    nats_password: SecretStr | None = Field(None, description="Password of PODTAX_NATS_USER.")
    nats_creds: Path | None = Field(None, description="NATS credentials file (.creds: user JWT + nkey seed).")
    nats_nkey: Path | None = Field(None, description="File holding an nkey seed (SU...) for nkey authentication.")
    nats_tls_ca: Path | None = Field(None, description="CA certificate that signed the NATS server's (TLS).")
    nats_tls_cert: Path | None = Field(None, description="Client certificate for NATS mutual TLS "
                                       "(with PODTAX_NATS_TLS_KEY).")
    nats_tls_key: Path | None = Field(None, description="Key of PODTAX_NATS_TLS_CERT.")
    nats_replicas: int = Field(1, ge=1, le=5, description="Copies of each podtax stream and KV bucket on a NATS "
                               "JetStream cluster (3 on a three-server cluster; 1 on a single server).")
    nats_stream_max_bytes: int = Field(4 * 2**30, ge=-1, le=2**63 - 1,
                                       description="Size limit of each podtax JetStream stream "
                                       "(events; dead letters), bytes, -1 = none. A full events stream refuses "
                                       "new events (publishers see the error); dead letters drop the oldest. "
                                       "The runner applies it when it creates the streams; nobody changes them "
                                       "after (`nats stream edit`, as a NATS admin): a service warns when "
                                       "its setting differs.")
    nats_stream_max_age_s: float = Field(30 * 86400, ge=0, description="Events older than this leave the streams "
                                         "(seconds, 0 = kept forever); the analyzer has stored them by then.")
    nats_stream_max_msgs_per_subject: int = Field(
        1_000_000, ge=-1, le=2**63 - 1, description="Messages each subject of the events stream holds at most (one "
        "node's host facts, one node's run logs, ...; -1 = no limit). A subject at its limit refuses new messages on "
        "it alone (nothing is discarded): a node publishing without end is stopped at its own subjects' limit while "
        "the other nodes' reports are still taken (with no limit, it filled the shared stream and every node's runs "
        "stopped). Applied and changed as PODTAX_NATS_STREAM_MAX_BYTES; needs nats-server 2.9.2 or later. A stream "
        "made by an earlier podtax has no such limit until a NATS admin runs `nats stream edit PODTAX "
        "--max-msgs-per-subject N --discard-per-subject` (both flags: without the second, a subject at its limit drops "
        "its oldest messages).")

    @field_validator("*", mode="before")
    @classmethod
    def _not_empty(cls, v: object, info: ValidationInfo) -> object:
        """An empty or blank value is a mistake (an unset shell variable), not the current folder or every address."""
        name = info.field_name or ""
        if isinstance(v, str) and not v.strip() and name not in EMPTY_MEANS:
            field = cls.model_fields[name]
            default = "" if field.default is None else " for the default" + (
                " (computed at start-up)" if field.default_factory else f" {field.default}")
            raise ValueError(f"is empty: unset it{default}, or set a value")
        return v

    @model_validator(mode="after")
    def _nats_identity(self) -> Common:
        if (self.nats_user is None) != (self.nats_password is None):
            raise ValueError("PODTAX_NATS_USER and PODTAX_NATS_PASSWORD go together")
        if sum(x is not None for x in (self.nats_user, self.nats_creds, self.nats_nkey)) > 1:
            raise ValueError("choose one NATS identity: PODTAX_NATS_USER, PODTAX_NATS_CREDS or PODTAX_NATS_NKEY")
        if (self.nats_tls_cert is None) != (self.nats_tls_key is None):
            raise ValueError("PODTAX_NATS_TLS_CERT and PODTAX_NATS_TLS_KEY go together")
        for name in ("nats_creds", "nats_nkey", "nats_tls_ca", "nats_tls_cert", "nats_tls_key"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"PODTAX_{name.upper()}: {path} is not a readable file: point it at an existing "
                                 "file, or unset it")
        if self.nats_tls_ca or self.nats_tls_cert:  # files ssl cannot read: said now, not at the first connect
            tls_context(*_names(self.nats_tls_ca, self.nats_tls_cert, self.nats_tls_key), NATS_TLS_SETTINGS)
        return self

    @field_validator("nats_url")
    @classmethod
    def _nats_scheme(cls, v: str) -> str:
        for url in v.split(","):
            if not url.strip().startswith(("nats://", "tls://", "ws://", "wss://")):
                raise ValueError(f"{redact(url)!r} must start with nats://, tls://, ws:// or wss://")
            try:  # nats-py would fail later with a bare "nats: invalid URL" or a traceback
                port = urllib.parse.urlsplit(url.strip()).port
            except ValueError:
                port = 0
            if port == 0 or not urllib.parse.urlsplit(url.strip()).hostname:
                raise ValueError(f"{redact(url)!r} needs a host and, if given, a port from 1 to 65535 "
                                 f"(as in nats://127.0.0.1:4222)")
        return v


NAMESPACE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"  # a Kubernetes namespace's name (a DNS-1123 label)
# most objects' names, a Lease's too: a DNS-1123 subdomain, at most 253 characters (max_length), dot-separated
# parts each starting and ending with a letter or digit (the API server refuses a..b, a.-b, a-.b)
OBJECT_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
NATS_TLS_SETTINGS = ("PODTAX_NATS_TLS_CA", "PODTAX_NATS_TLS_CERT", "PODTAX_NATS_TLS_KEY")
NOMAD_TLS_SETTINGS = ("PODTAX_RUNNER_NOMAD_CACERT", "PODTAX_RUNNER_NOMAD_CLIENT_CERT", "PODTAX_RUNNER_NOMAD_CLIENT_KEY")


def _names(*paths: Path | None) -> tuple[str | None, ...]:
    return tuple(str(p) if p else None for p in paths)


def tls_context(ca: str | None, cert: str | None, key: str | None,
                settings: tuple[str, str, str] = NATS_TLS_SETTINGS) -> ssl.SSLContext:
    """A client's TLS context from a CA, a certificate and its key; ValueError naming the setting (of `settings`:
    CA, certificate, key) whose file ssl cannot use (not PEM, a key not the certificate's). The settings check
    it at start-up: it was a traceback at the first connect."""
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    except ssl.SSLError as exc:
        raise ValueError(f"{settings[0]}: {ca} holds no certificate ssl can read ({exc.reason or exc}); point it "
                         f"at the PEM certificate of the CA that signed the server's") from None
    if cert:
        try:
            ctx.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            raise ValueError(f"{settings[1]} / {settings[2]}: {cert} and {key} are not a PEM certificate and its "
                             f"key ({exc.reason or exc}); point them at the client's") from None
    return ctx


def is_duckdb_file(path: Path) -> bool:
    """Whether a file starts as DuckDB's do (the magic `DUCK` after an 8-byte checksum)."""
    with path.open("rb") as f:
        return f.read(12)[8:12] == b"DUCK"


def _folder(v: Path | None) -> Path | None:
    """A folder the service creates when missing: anything else already there is refused at start-up
    (an audit's file given as the agent's work directory gave a NotADirectoryError traceback)."""
    if v is not None and v.exists() and not v.is_dir():
        raise ValueError(f"{v} exists and is not a folder: name a folder (it is created when missing)")
    return v


def _readable_file(v: Path | None) -> Path | None:
    """A file the service reads (a kubeconfig): it must be there (an audit's missing one gave a traceback)."""
    if v is not None and not v.is_file():
        raise ValueError(f"{v} is not a readable file: point it at an existing file, or unset it")
    return v


_HOST_LABEL = r"[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9])?"
_HOST_NAME = re.compile(rf"^{_HOST_LABEL}(\.{_HOST_LABEL})*$")


def host_names(value: str) -> frozenset[str]:
    """The comma-separated names or addresses of PODTAX_ANALYZER_ALLOWED_HOSTS, lowercased, without a final dot or
    an IPv6 address's brackets (as the Host header's name is compared); ValueError names the first that is not one
    (a URL, a port, a path, a space inside)."""
    names = set()
    for given in value.split(","):
        name = given.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")
        if not name:
            continue
        try:
            names.add(str(ipaddress.ip_address(name)))
        except ValueError:
            if len(name) > 253 or not _HOST_NAME.match(name):
                raise ValueError(f"{given.strip()!r} is not a host name or address: list names as clients put them "
                                 "in the Host header, comma-separated, without scheme, port or path (e.g. "
                                 "podtax.example.org,10.0.0.5)") from None
            names.add(name)
    return frozenset(names)


NODE_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$"  # a node name, as Kubernetes names nodes


def host_node() -> str:
    """This host's node name: its hostname in lowercase, as kubelet registers it (Kubernetes node names are
    lowercase): the host's runs pair with its pods' whatever case the hostname has."""
    return socket.gethostname().lower()


def capitals_problem(node: str) -> str | None:
    """Why `node` is not a node name as Kubernetes writes it (capitals), naming the spelling to write; or None."""
    if node != node.lower():
        return (f"node {node!r}: node names are lowercase, as Kubernetes writes them (kubelet lowercases the "
                f"hostname), so the host's and the pods' runs pair: write {node.lower()}")
    return None


class HostAgentSettings(Common):
    agent_node: str = Field(default_factory=host_node, min_length=1, max_length=253, pattern=NODE_PATTERN,
                            description="Node name this agent answers for (defaults to the hostname in lowercase, "
                                        "as kubelet registers it): lowercase letters, digits and `-_.`, as "
                                        "Kubernetes names its nodes.")
    agent_workdir: Path = Field(Path("/var/tmp/podtax"), description="Scratch directory (fio files).")
    agent_output_cap_bytes: int = Field(
        512_000, ge=10_000, le=50_000_000,
        description="Cap on stdout+stderr kept per run (must fit NATS max_payload, 1 MiB by default).")
    agent_facts_interval_s: float = Field(300, ge=1, description="How often host facts are re-checked.")
    agent_state_dir: Path | None = Field(None, description="Where the agent keeps its node lock and the record "
                                         "of the running benchmark's process group; default <workdir>/.state.")
    agent_ack_wait_s: float = Field(30, ge=1, le=3600, description="Seconds without news before a run request "
                                    "is redelivered (a crashed agent's run is retried after this).")

    # the agent makes them at start and checks they are its user's alone (podtax_host_agent.owndir.prepare)
    _folders = field_validator("agent_workdir", "agent_state_dir")(_folder)

    @field_validator("agent_node")
    @classmethod
    def _lowercase(cls, v: str) -> str:
        if problem := capitals_problem(v):
            raise ValueError(problem.replace(f"write {v.lower()}", f"set PODTAX_AGENT_NODE={v.lower()}"))
        return v


class ParserSettings(Common):
    parser_batch: int = Field(256, ge=1, le=5000, description="Raw logs fetched per pull.")


class AnalyzerSettings(Common):
    analyzer_db: Path = Field(Path(".podtax/podtax.duckdb"),
                              description="DuckDB file (the analyzer is its only writer).")
    analyzer_host: str = Field("127.0.0.1", description="HTTP API bind address (on loopback the API answers only "
                               "to a loopback Host header: no DNS rebinding).")
    analyzer_port: int = Field(8700, ge=0, le=65535, description="HTTP API port (0 = pick a free one).")
    analyzer_allowed_hosts: str = Field("", description="Comma-separated names (or addresses) the HTTP API answers "
                                        "to in the Host header, besides loopback ones; another gets 400 (/healthz "
                                        "excepted: probes). Names match without a final dot, addresses in any "
                                        "spelling (`[fe80::0001]` is `fe80::1`). Empty = any name, or on loopback "
                                        "loopback names only.")
    _allowed_hosts = field_validator("analyzer_allowed_hosts")(lambda v: ",".join(sorted(host_names(v))))
    # 2,000 events a batch stored a result for 113 µs of CPU against 132 µs (a commit's cost is mostly
    # fixed) but raised the analyzer's peak memory by ~40 MB at 100,000 results: 1,000 keeps it < 300 MB.
    analyzer_batch: int = Field(1000, ge=1, le=10000,
                                description="Events fetched per pull and committed per transaction.")
    api_token: SecretStr | None = Field(None, min_length=16, description="Bearer token that mutating API calls "
                                        "(POST /api/reparse) need; unset = they are refused. The CLI sends it.")
    api_reads_need_token: bool = Field(False, description="Reads need the token too (set it when the API is "
                                       "reachable beyond this host).")
    analyzer_workers: int | None = Field(None, ge=0, le=1024, description="Processes a comparison table's cells are "
                                         "analyzed in (0 or 1 = in the caller, at most 1024); unset = one per idle "
                                         "core, from 64 cells.")
    analyzer_score_cache_values: int = Field(4_000_000, ge=10_000, description="Metric values the node-score "
                                             "cache keeps in memory (16 bytes each; 4,000,000 = 64 MB). When the "
                                             "keys one publication touches hold more, each publication reloads them "
                                             "from DuckDB (slow, and logged): raise it.")
    analyzer_memory_mb: int = Field(1024, ge=128, le=2**24, description="DuckDB's memory limit, MB (128 to "
                                    "16777216): larger queries spill to <db>.tmp (DuckDB's own default would be "
                                    "80% of the RAM). Its cache of the file's blocks is emptied when it passes 32 MB "
                                    "(checked every 10 batches).")

    @field_validator("analyzer_db")
    @classmethod
    def _database(cls, v: Path) -> Path:
        """A DuckDB file, or a name for a new one in a folder that can be made: a folder, an empty value
        (the current folder) or another kind of file gave a DuckDB traceback at start-up (audit)."""
        if not str(v).strip() or str(v) == "." or v.is_dir():
            raise ValueError("names a folder: give a file, e.g. .podtax/podtax.duckdb")
        if v.is_file() and v.stat().st_size > 0 and not is_duckdb_file(v):
            raise ValueError(f"{v} is not a DuckDB database file (left as it is): move it away, or name a new file or "
                             "an analyzer's database (podtax up: another --data-dir)")
        for parent in v.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ValueError(f"{parent} is a file, so {v} cannot be made: name a file in a folder")
                break
        return v


class RunnerSettings(Common):
    runner_kubeconfig: Path | None = Field(None, description="kubeconfig for pod runs; in-cluster when unset "
                                                             "(KUBECONFIG is not read).")
    _kubeconfig = field_validator("runner_kubeconfig")(_readable_file)
    runner_namespace: str = Field("podtax-runs", pattern=NAMESPACE,
                                  description="Namespace where benchmark Jobs are created.")
    runner_kubernetes: bool = Field(True, description="Enable the Kubernetes executor (pod runs).")
    runner_nomad_addr: str = Field("http://127.0.0.1:4646", pattern=r"^https?://",
                                   description="Nomad HTTP API for volume-churn on nomad (like NOMAD_ADDR).")
    runner_nomad_token: SecretStr | None = Field(None, description="Nomad ACL token (X-Nomad-Token); empty = none "
                                                 "(as Nomad's CLI reads an empty NOMAD_TOKEN). Its policy needs "
                                                 '`namespace "<ns>" { capabilities = ["csi-write-volume", '
                                                 '"csi-list-volume"] }` and `plugin { policy = "read" }`.')

    @field_validator("runner_nomad_token", mode="before")
    @classmethod
    def _no_token(cls, v: object) -> object:
        """Empty is no token (no header sent); blanks are a mistake, not a token."""
        if isinstance(v, str) and v and not v.strip():
            raise ValueError("is blank: unset it or leave it empty for no token, or set the token")
        return v or None

    runner_nomad_namespace: str = Field("default", pattern=r"^[A-Za-z0-9_-]{1,128}$", description="Nomad namespace.")
    runner_nomad_region: str = Field("", pattern=r"^[A-Za-z0-9_-]{0,128}$",
                                     description="Nomad region; empty = the agent's.")
    runner_nomad_cacert: Path | None = Field(None, description="CA certificate that signed the Nomad server's.")
    runner_nomad_client_cert: Path | None = Field(None, description="Client certificate for Nomad mTLS.")
    runner_nomad_client_key: Path | None = Field(None, description="Key of the Nomad client certificate.")
    _nomad_files = field_validator("runner_nomad_cacert", "runner_nomad_client_cert",
                                   "runner_nomad_client_key")(_readable_file)
    runner_simulate: bool = Field(False, description="SIMULATED runs, for tests and fault drills: no benchmark "
                                  "runs; each dispatched run gets a synthetic result flagged SIMULATED at once.")
    runner_report_grace_s: float = Field(60.0, ge=0, description="Seconds beyond a run's timeout before a run "
                                         "that never reported back is recorded failed (no-report).")
    runner_spool_dir: Path | None = Field(None, description="Folder where the runner keeps a report NATS refuses "
                                          "(for want of room) when its KV bucket refuses the copy too (the server's "
                                          "JetStream storage used up), so a restart sends it instead of running the "
                                          "run again; at most 64 MiB. Unset = that copy is held in memory only (a "
                                          "restart loses it). Give it a volume that outlives the runner's pod.")
    _spool = field_validator("runner_spool_dir")(_folder)

    @model_validator(mode="after")
    def _nomad_tls(self) -> RunnerSettings:
        if self.runner_nomad_client_key and not self.runner_nomad_client_cert:
            raise ValueError("PODTAX_RUNNER_NOMAD_CLIENT_KEY is the key of PODTAX_RUNNER_NOMAD_CLIENT_CERT: set both")
        if self.runner_nomad_cacert or self.runner_nomad_client_cert:  # said at start, not at a volume-churn run
            tls_context(*_names(self.runner_nomad_cacert, self.runner_nomad_client_cert, self.runner_nomad_client_key),
                        NOMAD_TLS_SETTINGS)
        return self


class SchedulerSettings(Common):
    scheduler_kubeconfig: Path | None = Field(None, description="kubeconfig; unset = in-cluster, else KUBECONFIG's "
                                                                "files, else ~/.kube/config.")
    # any non-blank text: Kubernetes checks no pod's schedulerName (ValidatePodSpec), kube-scheduler only that its
    # profiles' are not empty; a DNS-name check here would refuse a name pods can carry
    scheduler_name: str = Field("benchmark-scheduler", min_length=1, description="schedulerName that pods opt in "
                                "with (any text but blank: Kubernetes does not check a pod's schedulerName).")
    scheduler_namespaces: str = Field("", description="Comma-separated namespaces to watch; empty = all.")
    scheduler_score_env: Literal["host", "kubernetes"] = Field("kubernetes", description="Results that rank nodes.")
    scheduler_score_ttl_s: float = Field(7 * 86400, gt=0, description="Older scores count as missing.")
    scheduler_profile: Path | None = Field(None, description="YAML scheduling profile (plugin weights).")
    scheduler_metrics_port: int = Field(9464, ge=0, le=65535, description="Prometheus metrics port.")
    scheduler_leader_elect: bool = Field(True, description="Use a Lease so only one replica binds.")
    scheduler_lease_name: str = Field("benchmark-scheduler", max_length=253, pattern=OBJECT_NAME, description="Name "
                                      "of the leader-election Lease (an object name: lowercase letters, digits, '-' "
                                      "and '.', each dot-separated part starting and ending with a letter or "
                                      "digit; at most 253).")
    scheduler_lease_namespace: str = Field("kube-system", pattern=NAMESPACE,
                                           description="Namespace of the Lease.")
    scheduler_lease_duration_s: float = Field(15.0, gt=0, description="Lease duration, seconds.")
    scheduler_renew_deadline_s: float = Field(10.0, gt=0, description="Leader gives up if not renewed by then.")
    scheduler_retry_period_s: float = Field(2.0, gt=0, description="Seconds between lease attempts.")
    scheduler_identity: str = Field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}",
                                    min_length=1, max_length=128, description="This replica's identity.")
    scheduler_binders: int = Field(16, ge=1, le=256, description="Threads that bind and record events.")

    _kubeconfig = field_validator("scheduler_kubeconfig")(_readable_file)

    @field_validator("scheduler_namespaces")
    @classmethod
    def _namespaces(cls, v: str) -> str:
        for name in filter(None, (n.strip() for n in v.split(","))):
            if not re.fullmatch(NAMESPACE, name):
                raise ValueError(f"{name!r} is not a namespace name (lowercase letters, digits and '-', at most 63)")
        return v

    @model_validator(mode="after")
    def _lease_times(self) -> SchedulerSettings:
        # client-go's rule: a leader must renew before its lease runs out, and retry within the deadline
        if self.scheduler_leader_elect and not (self.scheduler_lease_duration_s > self.scheduler_renew_deadline_s
                                                 > self.scheduler_retry_period_s):
            raise ValueError("PODTAX_SCHEDULER_LEASE_DURATION_S must be above PODTAX_SCHEDULER_RENEW_DEADLINE_S, "
                             "and that above PODTAX_SCHEDULER_RETRY_PERIOD_S (defaults 15, 10, 2)")
        return self


S = TypeVar("S", bound=BaseSettings)


def load(cls: type[S], **overrides: object) -> S:
    """Build settings, turning validation errors into one message that names each variable."""
    try:
        return cls(**overrides)
    except ValidationError as exc:
        prefix = cls.model_config.get("env_prefix", "")
        lines = []
        for err in exc.errors():
            if not err["loc"]:  # a check across settings: its message names them (never echo the input)
                lines.append(pydantic_msg(err["msg"]))
                continue
            field = str(err["loc"][0])
            info = cls.model_fields.get(field)
            secret = info is not None and "SecretStr" in str(info.annotation)  # never echo a secret
            given = err.get("input")  # a URL's password or token: never echoed either
            got = "a hidden value" if secret else repr(redact(given) if isinstance(given, str) else given)
            lines.append(f"{prefix}{field.upper()}: {pydantic_msg(err['msg'])} (got {got})")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines), lines) from None


SERVICES: dict[str, type[Common]] = {
    "host agent": HostAgentSettings, "parser": ParserSettings, "analyzer": AnalyzerSettings,
    "runner": RunnerSettings, "scheduler": SchedulerSettings,
}


def reference_markdown() -> str:
    """The configuration reference (docs/configuration.md), generated from the settings classes."""
    out = ["# podtax configuration (generated by `make docs`; do not edit)", "",
           "Every service reads `PODTAX_*` environment variables at start-up and exits with status 2, "
           "naming the variable, when one is invalid. A variable set to an empty or blank value is invalid "
           "(unset it for its default), except where the table says what empty means; numbers must be finite "
           "(`inf` and `nan` are refused).", ""]
    seen: set[str] = set()
    for title, cls in [("all services", Common), *SERVICES.items()]:
        rows = [(f"PODTAX_{name.upper()}", info) for name, info in cls.model_fields.items()
                if cls is Common or name not in Common.model_fields]
        rows = [(var, info) for var, info in rows if var not in seen]
        if not rows:
            continue
        out += [f"## {title}", "", "| variable | default | meaning |", "|---|---|---|"]
        for var, info in rows:
            seen.add(var)
            default = "(computed at start-up)" if info.default_factory else info.default
            out.append(f"| `{var}` | `{default}` | {info.description or ''} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover
    print(reference_markdown())
