"""One pydantic-settings class per service (each adds its `PODTAX_<SERVICE>_*` variables to Common's)."""

from __future__ import annotations

import re
import socket
import uuid
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from podtax.config_checks import (
    NAMESPACE,
    NODE_PATTERN,
    NOMAD_TLS_SETTINGS,
    OBJECT_NAME,
    capitals_problem,
    folder_path,
    host_names,
    host_node,
    is_duckdb_file,
    path_names,
    readable_file,
    tls_context,
)
from podtax.config_common import Common


class HostAgentSettings(Common):
    agent_node: str = Field(default_factory=host_node, min_length=1, max_length=253, pattern=NODE_PATTERN,
                            description="Node name this agent answers for (defaults to the hostname in lowercase, "
                                        "as kubelet registers it): lowercase letters, digits and `-_.`, as "
                                        "`podtax up --node` takes them (Kubernetes itself takes no `_`).")
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
    _folders = field_validator("agent_workdir", "agent_state_dir")(folder_path)

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
    _kubeconfig = field_validator("runner_kubeconfig")(readable_file)
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
                                   "runner_nomad_client_key")(readable_file)
    runner_simulate: bool = Field(False, description="SIMULATED runs, for tests and fault drills: no benchmark "
                                  "runs; each dispatched run gets a synthetic result flagged SIMULATED at once.")
    runner_report_grace_s: float = Field(60.0, ge=0, description="Seconds beyond a run's timeout before a run "
                                         "that never reported back is recorded failed (no-report).")
    runner_spool_dir: Path | None = Field(None, description="Folder where the runner keeps a report NATS refuses (for "
                                          "want of room, or for its size) when its KV bucket refuses the copy too (the "
                                          "server's JetStream storage used up, or its max_payload), so a restart sends "
                                          "it instead of running the run again; at most 64 MiB. Unset = that copy is "
                                          "held in memory only (a restart loses it). Give it a volume that outlives "
                                          "the runner's pod. Its subfolder measured/ keeps the timeline a failed "
                                          "control-plane run measured before it ended (one file per run and "
                                          "submission, marked aborted: never a result, except that of a run whose "
                                          "deletes were refused after every create and bind, which the runner also "
                                          "publishes as a result flagged DELETE_REFUSED; at most 64 MiB, pruned as "
                                          "PODTAX_RUNNER_MEASURED_MAX_FILES and _MAX_AGE_DAYS say); unset, that "
                                          "timeline is one line of the runner's log.")
    _spool = field_validator("runner_spool_dir")(folder_path)
    runner_measured_max_files: int = Field(1000, description="Most timelines of failed control-plane runs kept in "
                                           "PODTAX_RUNNER_SPOOL_DIR/measured/: the oldest beyond are pruned (0 = no "
                                           "limit), never one whose run is not reported yet (it counts all the "
                                           "same); each pruned file is named in the runner's log.")
    runner_measured_max_age_days: float = Field(30.0, description="Days a timeline of a failed control-plane run "
                                                "is kept in PODTAX_RUNNER_SPOOL_DIR/measured/ (by its file's time; "
                                                "0 = no limit), never pruned before its run is reported.")

    @field_validator("runner_measured_max_files", "runner_measured_max_age_days")
    @classmethod
    def _no_negative(cls, v: float, info: ValidationInfo) -> float:
        if v < 0:
            what = "files" if info.field_name == "runner_measured_max_files" else "days"
            raise ValueError(f"is below 0: set the most {what} to keep, or 0 for no limit")
        return v

    @model_validator(mode="after")
    def _nomad_tls(self) -> RunnerSettings:
        if self.runner_nomad_client_key and not self.runner_nomad_client_cert:
            raise ValueError("PODTAX_RUNNER_NOMAD_CLIENT_KEY is the key of PODTAX_RUNNER_NOMAD_CLIENT_CERT: set both")
        if self.runner_nomad_cacert or self.runner_nomad_client_cert:  # said at start, not at a volume-churn run
            files = path_names(self.runner_nomad_cacert, self.runner_nomad_client_cert, self.runner_nomad_client_key)
            tls_context(*files, NOMAD_TLS_SETTINGS)
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

    _kubeconfig = field_validator("scheduler_kubeconfig")(readable_file)

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
