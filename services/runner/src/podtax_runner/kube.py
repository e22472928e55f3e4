"""The Kubernetes executor: one Job per pod run, followed until done, then its log becomes a raw-log
event. Works against any API server reachable by kubeconfig or in-cluster config (kubesim too)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from nats.errors import Error as NatsError
from podtax import events, netbench, provenance, telemetry, templates
from podtax.bus import Bus, BusError
from podtax.campaign import PodSpec
from podtax.config import ConfigError, RunnerSettings
from podtax.kubeclient import load_config

from podtax_runner import netserver, retry
from podtax_runner.jobspec import SUBMITTED, job_manifest, job_name, run_device, same_run
from podtax_runner.outbox import Outbox

log = logging.getLogger("podtax.runner.kube")
SOURCE = "podtax/runner"
RETRIES = 5
T = TypeVar("T")


# its outcome is held in its outbox until NATS takes it (outbox.py); this is said of a NATS error after that
NOT_RECORDED = "pod run %s: its outcome was published, but what it saw of its image could not be recorded (%s)"
GONE_S = 60.0  # how long a Job left by another submission may take to go once deleted
PRIVILEGED_LEVEL = "privileged"  # the Pod Security level a namespace needs for device runs
POD_SECURITY_LABEL = "pod-security.kubernetes.io/enforce"


class Cancelled(Exception):
    """The run's campaign was cancelled while its Job had not finished (KubeExecutor.cancel)."""


def with_retries(fn: Callable[[], T], what: str) -> T:
    """Call the API, retrying transient errors (429, 5xx, connection) with backoff 0.5 s doubling."""
    return retry.call(fn, what, attempts=RETRIES, first_s=0.5, factor=2, max_s=8)


FOLLOW_WATCH_S = 5  # one watch of a Job lasts at most this long, so close() ends its thread within it


def no_access(why: str, kubeconfig_env: str) -> str:
    """Why the runner has no Kubernetes access (PODTAX_RUNNER_KUBECONFIG unset, no cluster), in one line; it does
    not read KUBECONFIG (a shell's own cluster is not taken for pod runs), and says so when KUBECONFIG is set."""
    env = f"; KUBECONFIG ({kubeconfig_env}) is not read by the runner" if kubeconfig_env else ""
    return (f"PODTAX_RUNNER_KUBECONFIG is unset and there is no in-cluster access ({why}){env}: set "
            "PODTAX_RUNNER_KUBECONFIG, run in a cluster, or disable pod runs with PODTAX_RUNNER_KUBERNETES=false")


class KubeExecutor:
    def __init__(self, settings: RunnerSettings, bus: Bus, api: client.ApiClient) -> None:
        self.settings = settings
        self.bus = bus
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.campaign_of: dict[str, str] = {}  # run id -> its campaign, of the runs in self.tasks
        self.cancelled: set[str] = set()  # run ids whose campaign was cancelled (cancel): their Jobs are deleted
        self.on_image_versions: Callable[[str, dict[str, str]], Awaitable[None]] | None = None
        self.on_reported: Callable[[events.RunSpec], Awaitable[bool | None]] | None = None  # log or failure sent
        self._namespaces: set[str] = set()
        # a log or failure NATS does not take is held and sent again until it does, the run held in flight meanwhile:
        # before, it was given up at once while nats-py held a copy it sent on reconnecting, and the run, expired as
        # no-report, ran again: two results for one planned run (tests/integration/test_pod_run_publish_nats_down.py)
        self.outbox = Outbox(bus, log, "pod run", "the next runner resumes the run: it re-attaches to its Job if "
                             "that is still there, else runs it again")
        # Set by close(): a cancelled task's _follow thread runs on until it sees this, and asyncio.run
        # waits for that thread at exit, so without it a runner stopping took up to a run's timeout + 60 s.
        self._closing = threading.Event()

    @classmethod
    def create(cls, settings: RunnerSettings, bus: Bus) -> KubeExecutor:
        cfg = client.Configuration()
        if settings.runner_kubeconfig:
            load_config(cfg, settings.runner_kubeconfig, "PODTAX_RUNNER_KUBECONFIG")
        else:
            try:
                config.load_incluster_config(client_configuration=cfg)
            except config.ConfigException as exc:
                raise ConfigError(no_access(str(exc), os.environ.get("KUBECONFIG", ""))) from None
        return cls(settings, bus, client.ApiClient(cfg))

    # ------------------------------------------------------------ nodes

    def nodes(self) -> list[dict[str, Any]]:
        items = with_retries(lambda: self.core.list_node().items, "list nodes")
        return [self._node_doc(n) for n in items]

    def select_nodes(self, selector: str) -> list[str]:
        items = with_retries(lambda: self.core.list_node(label_selector=selector).items, "list nodes")
        return sorted(n.metadata.name for n in items)

    @staticmethod
    def _node_doc(n: client.V1Node) -> dict[str, Any]:
        cpu = (n.status.capacity or {}).get("cpu", "1")
        threads = max(1, int(cpu[:-1]) // 1000 if cpu.endswith("m") else int(float(cpu)))
        labels = dict(n.metadata.labels or {})  # `campaign submit` matches a node selector against them
        return {"node": n.metadata.name, "hw_threads": threads, "kubernetes": True,
                "arch": labels.get("kubernetes.io/arch"), "labels": labels}

    # ------------------------------------------------------------ runs

    def launch(self, run: events.RunSpec, pod: PodSpec, submitted: datetime | None = None) -> None:
        """Start (or, after a runner restart, re-attach to) the Job of a pod run; `submitted`: when its campaign
        was submitted, recorded on the Job so that a Job left by another submission is not taken for it."""
        if run.run_id not in self.tasks or self.tasks[run.run_id].done():
            when = submitted.isoformat() if submitted else None
            task = asyncio.create_task(self._run(run, pod, when), name=f"job {run.run_id}")
            self.tasks[run.run_id] = task
            self.campaign_of[run.run_id] = run.campaign
            task.add_done_callback(lambda t: self._done(run.run_id, t))

    def resend(self, run: events.RunSpec, event: events.Envelope) -> None:
        """Send the report of a pod run an earlier runner kept (outbox.KEPT: NATS refused it), not run it again."""
        task = asyncio.create_task(self._resend(run, event), name=f"job {run.run_id}")
        self.tasks[run.run_id] = task
        task.add_done_callback(lambda t: self._done(run.run_id, t))

    def _done(self, run_id: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(run_id) is task:  # only runs in flight are kept
            self.tasks.pop(run_id, None)
            self.campaign_of.pop(run_id, None)
            self.cancelled.discard(run_id)

    def cancel(self, campaign: str) -> list[str]:
        """Stop the pod runs of `campaign` in flight here: each one's Job (and so its pod) is deleted before it
        finishes and the run reports a failure with reason `cancelled` (counted cancelled); a Job found finished
        reports its result. Its follow notices within FOLLOW_WATCH_S; a run not yet started creates no Job. Before,
        a cancelled campaign's pod run went on to its end or timeout, and its result was stored. The run ids."""
        ids = [rid for rid, of in self.campaign_of.items() if of == campaign]
        self.cancelled.update(ids)
        return ids

    def _ensure_namespace(self, ns: str) -> None:
        if ns in self._namespaces:
            return
        try:
            self.core.create_namespace({"metadata": {"name": ns, "labels": {"app.kubernetes.io/part-of": "podtax"}}})
        except ApiException as exc:
            if exc.status not in (403, 409):  # exists, or we may not create namespaces (fine if it exists)
                raise
        self._namespaces.add(ns)

    async def _run(self, run: events.RunSpec, pod: PodSpec, submitted: str | None = None) -> None:
        ns = pod.namespace or self.settings.runner_namespace
        name = job_name(run.run_id)
        server: netserver.Server | None = None
        keep = False  # a runner stopping leaves a Job running: the next runner re-attaches to it
        try:
            manifest = job_manifest(run, pod, ns, submitted)
            if netserver.needs_server(run):  # the network test's server side, where the topology says
                try:
                    await asyncio.to_thread(self._ensure_namespace, ns)
                    server = await asyncio.to_thread(netserver.start, self.core, ns, pod.image, run)
                except netbench.NetbenchError as exc:
                    await self._fail(run, "server-not-ready", str(exc))
                    return
                manifest = job_manifest(netserver.pointed(run, server.address), pod, ns, submitted)
            device = run_device(run, pod)
            if device and (why := await asyncio.to_thread(self._privileged_refusal, ns, device)):
                await self._fail(run, "privileged-not-allowed", why)
                return
            created = events.now()
            if run.run_id in self.cancelled:  # cancelled before its Job was made (a restart resumed it)
                raise Cancelled
            await asyncio.to_thread(self._create, ns, manifest)
            outcome = await asyncio.to_thread(self._follow, ns, name, run.timeout_s + 60, run.run_id)
            if outcome is None:
                await self._fail(run, "timeout", f"Job {ns}/{name} did not finish within {run.timeout_s:g} s + 60 s")
                return
            pod_obj, exit_code, started, finished = outcome
            # Kubernetes times have 1 s resolution: a container "started" at 12:00:03 may really have started
            # at 12:00:03.6, after the node's previous run ended at 12:00:03.4. It cannot have started before
            # its Job was created, so that bound keeps back-to-back runs from looking like an OVERLAP.
            if started is not None and started < created:
                started = created
                finished = max(finished, started) if finished is not None else None
            text = await asyncio.to_thread(self._logs, ns, pod_obj.metadata.name)
            await self._publish_log(run, pod_obj, text, exit_code, started, finished)
        except Cancelled:
            await asyncio.to_thread(self._delete, ns, name)  # before the report: a restart then makes no Job
            await self._fail(run, "cancelled", f"campaign {run.campaign} was cancelled while this run was in flight: "
                             f"its Job {ns}/{name} and its pod were deleted before it finished")
        except ApiException as exc:
            await self._fail(run, "kubernetes-api", f"{exc.status} {exc.reason}: {(exc.body or '')[:300]}")
        except asyncio.CancelledError:
            keep = server is None  # a network run's client cannot outlive its server
            raise
        except (BusError, NatsError) as exc:  # recording the image's tool versions (audit: a traceback, then 'Task
            log.warning(NOT_RECORDED, run.run_id, exc)  # exception was never retrieved')
        except Exception as exc:  # noqa: BLE001 - recorded as a failure, never lost
            log.exception("pod run %s failed", run.run_id)
            await self._fail(run, "executor-error", f"{type(exc).__name__}: {exc}")
        finally:
            if not keep:
                await asyncio.to_thread(self._delete, ns, name)
            if server is not None:
                await asyncio.to_thread(netserver.stop, self.core, ns, server)

    def _privileged_refusal(self, ns: str, device: str) -> str | None:
        """Why a privileged device run may not start in `ns` (None when the namespace allows it):
        its Pod Security label must say `privileged`, as an operator sets it on purpose."""
        self._ensure_namespace(ns)
        try:
            labels = with_retries(lambda: self.core.read_namespace(ns), "read namespace").metadata.labels or {}
        except ApiException as exc:
            return f"cannot read namespace {ns} to check it allows privileged pods ({exc.status} {exc.reason})"
        level = labels.get(POD_SECURITY_LABEL)
        if level != PRIVILEGED_LEVEL:
            return (f"reading {device} in a pod needs a privileged container, and namespace {ns} does not allow "
                    f"it ({POD_SECURITY_LABEL}={level or 'unset'}): label it {POD_SECURITY_LABEL}={PRIVILEGED_LEVEL} "
                    f"(deploy/k8s/components/hdparm-privileged) on a cluster dedicated to benchmarking, or run "
                    f"the test on the host only")
        return None

    def _create(self, ns: str, manifest: dict[str, Any]) -> None:
        """Create the run's Job. One of its name already there is followed when it is this run's (a restarted
        runner); one left by another submission of a campaign of that name (the same run ids) is deleted first:
        following it stored that old run's log as this run's (audit)."""
        self._ensure_namespace(ns)
        name = manifest["metadata"]["name"]
        for attempt in range(2):
            try:
                with_retries(lambda: self.batch.create_namespaced_job(ns, manifest), "create job")
                return
            except ApiException as exc:
                if exc.status != 409 or attempt:  # a second conflict: no Job of that name could be replaced
                    raise
            try:
                have = with_retries(lambda: self.batch.read_namespaced_job(name, ns), "read job")
            except ApiException as exc:
                if exc.status == 404:  # gone meanwhile
                    continue
                raise
            if same_run(have.metadata.annotations, manifest):
                log.info("job %s already exists: following it (runner restart)", name)
                return
            log.warning("job %s/%s was left by another submission (%s): deleting it, then starting this run's", ns,
                        name, (have.metadata.annotations or {}).get(SUBMITTED, "not recorded"))
            self._delete(ns, name)
            self._gone(ns, name, have.metadata.uid)

    def _gone(self, ns: str, name: str, uid: str) -> None:
        """Wait until the Job `uid` of that name is deleted (GONE_S at most)."""
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline:
            try:
                if self.batch.read_namespaced_job(name, ns).metadata.uid != uid:
                    return
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise
            time.sleep(0.2)

    def _follow(self, ns: str, name: str, timeout_s: float,
                run_id: str = "") -> tuple[client.V1Pod, int | None, Any, Any] | None:
        """Watch the Job until it succeeds or fails; return its pod and container outcome. Raises Cancelled once
        `run_id` is cancelled, unless the Job has finished by then (its result is kept)."""
        deadline = time.monotonic() + timeout_s
        rv = None
        while time.monotonic() < deadline:
            if self._closing.is_set():
                return None  # the task that asked was cancelled; nobody reads this
            job = with_retries(lambda: self.batch.read_namespaced_job(name, ns), "read job")
            if (job.status.succeeded or 0) + (job.status.failed or 0) > 0:
                break
            if run_id in self.cancelled:
                raise Cancelled
            rv = job.metadata.resource_version
            w = watch.Watch()
            wait_s = int(min(FOLLOW_WATCH_S, max(1, deadline - time.monotonic())))
            try:
                for ev in w.stream(self.batch.list_namespaced_job, ns, field_selector=f"metadata.name={name}",
                                   resource_version=rv, timeout_seconds=wait_s):
                    st = ev["object"].status
                    if (st.succeeded or 0) + (st.failed or 0) > 0:
                        w.stop()
                        break
            except ApiException as exc:
                if exc.status != 410:  # 410 Gone: re-read the job and watch from its version
                    raise
        else:
            return None
        pods = with_retries(lambda: self.core.list_namespaced_pod(ns, label_selector=f"job-name={name}").items,
                            "list pods")
        pods = [p for p in pods if any(o.uid == job.metadata.uid for o in p.metadata.owner_references or [])]
        if not pods:
            raise RuntimeError(f"Job {ns}/{name} finished without a pod")
        p = pods[-1]
        exit_code, started, finished = None, None, None
        for cs in p.status.container_statuses or []:
            term = cs.state.terminated if cs.state else None
            if term:
                exit_code, started, finished = term.exit_code, term.started_at, term.finished_at
        return p, exit_code, started, finished

    def _logs(self, ns: str, pod: str) -> str:
        return with_retries(lambda: self.core.read_namespaced_pod_log(pod, ns, container="bench"), "read log")

    def _delete(self, ns: str, name: str) -> None:
        try:
            self.batch.delete_namespaced_job(name, ns, propagation_policy="Background")
        except (ApiException, OSError) as exc:
            if not isinstance(exc, ApiException) or exc.status != 404:
                log.warning("could not delete job %s/%s: %s (its TTL removes it)", ns, name, exc)

    async def _publish_log(self, run: events.RunSpec, p: client.V1Pod, text: str, exit_code: int | None,
                           started: datetime | None, finished: datetime | None) -> None:
        _, phases = provenance.split(text)
        cs = (p.status.container_statuses or [None])[0]
        annotations = p.metadata.annotations or {}
        prov = provenance.to_model(phases, qos_class=p.status.qos_class, image=cs.image if cs else None,
                                   image_digest=cs.image_id if cs else None,
                                   isolation=annotations.get("podtax.io/isolation"))
        version = phases.get("before", {}).get("tool_version")
        now = events.now()
        raw = events.RawLog(run=run, stdout=text, stderr="", exit_code=exit_code, started_at=started or now,
                            ended_at=finished or now, tool_version=version, provenance=prov)
        event = events.raw_log(raw, SOURCE).model_copy(update={"id": run.event_id("log")})
        with telemetry.run_step("pod run", run.run_id, started, finished, **{"k8s.pod.name": p.metadata.name}):
            if not await self.outbox.send(run, event, "log"):
                return
        await self._reported(run)
        await self._versions(run, cs.image if cs else None, version)

    async def _versions(self, run: events.RunSpec, image: str | None, version: str | None) -> None:
        """The tool version seen inside the run's image (the CLI warns when hosts differ)."""
        if version and image and self.on_image_versions:
            await self.on_image_versions(image, {templates.get(run.test).tool: version})

    async def _resend(self, run: events.RunSpec, event: events.Envelope) -> None:
        """A kept report sent: recorded as reported, and a log's tool version recorded as at its first send."""
        if not await self.outbox.resend(run, event):
            return
        await self._reported(run)
        if isinstance(event, events.RawLogV1):
            await self._versions(run, event.data.provenance.image, event.data.tool_version)

    async def _fail(self, run: events.RunSpec, reason: str, detail: str) -> None:
        failure = events.RunFailed(run=run, stage="kubernetes", reason=reason, detail=detail)
        if not await self.outbox.send(run, events.run_failed(failure, SOURCE), "failure"):
            return
        await self._reported(run)
        log.warning("pod run %s failed: %s", run.run_id, detail)

    async def _reported(self, run: events.RunSpec) -> None:
        """Recorded as reported; then its kept report, if any, goes (outbox.release)."""
        recorded = await self.on_reported(run) if self.on_reported else True
        await self.outbox.release(run, recorded is not False)

    def holding(self) -> dict[str, str]:
        """The run ids whose log or failure is held here until NATS takes it (none expires meanwhile), each with why."""
        return self.outbox.holding()

    async def close(self) -> None:
        self._closing.set()
        self.outbox.stop()
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
