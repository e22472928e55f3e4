"""The settings every service reads (Common), the error a bad setting raises, and `load`, which names the variable."""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from podtax.config_checks import NATS_TLS_SETTINGS, nats_key_problem, path_names, redact, tls_context
from podtax.templates import pydantic_msg

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
CLUSTER_PATTERN = r"^[A-Za-z0-9_-]{1,63}$"  # PODTAX_CLUSTER, as `podtax scores --cluster` checks it too


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
        for name, path in (("PODTAX_NATS_NKEY", self.nats_nkey), ("PODTAX_NATS_CREDS", self.nats_creds)):
            problem = path and nats_key_problem(name, path)
            if problem:
                raise ValueError(problem)
        if self.nats_tls_ca or self.nats_tls_cert:  # files ssl cannot read: said now, not at the first connect
            tls_context(*path_names(self.nats_tls_ca, self.nats_tls_cert, self.nats_tls_key), NATS_TLS_SETTINGS)
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
