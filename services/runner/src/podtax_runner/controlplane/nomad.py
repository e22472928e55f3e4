"""volume-churn on Nomad: plugin health check, then `PUT /v1/volume/csi/:id/create` and
`DELETE /v1/volume/csi/:id/delete` with `concurrency` workers (both calls are synchronous in Nomad:
they return once the plugin answered). Volume IDs are `podtax-<campaign>-<run>-<nnnn>`, so leftovers
are found by prefix. Nomad volumes have no Bound phase."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from podtax.config import RunnerSettings
from podtax.templates import VolumeChurn

from podtax_runner import retry as retries
from podtax_runner.controlplane.cleanup import WORKERS, Removed, delete_share, refused
from podtax_runner.controlplane.common import (
    Aborted,
    Context,
    Unreachable,
    fail_object,
    pool,
    timed_out,
    too_many_failed,
    unreachable,
)
from podtax_runner.controlplane.kubeapi import ATTEMPTS, request_totals
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")
ACCESS_MODES = {"ReadWriteOnce": "single-node-writer", "ReadWriteOncePod": "single-node-writer",
                "ReadOnlyMany": "multi-node-reader-only", "ReadWriteMany": "multi-node-multi-writer"}
UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def size_bytes(quantity: str) -> int:
    m = re.fullmatch(r"([0-9]+)([KMGT]i?)?", quantity)
    if not m:
        raise ValueError(f"not a size: {quantity!r}")
    return int(m.group(1)) * UNITS[m.group(2) or ""]


class NomadError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status} {text.strip()[:200]}")
        self.status, self.text = status, text


@dataclass(frozen=True)
class NomadConfig:
    address: str = "http://127.0.0.1:4646"
    token: str | None = None
    namespace: str = "default"
    region: str = ""
    cacert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None

    @classmethod
    def from_settings(cls, s: RunnerSettings) -> NomadConfig:
        return cls(s.runner_nomad_addr, s.runner_nomad_token.get_secret_value() if s.runner_nomad_token else None,
                   s.runner_nomad_namespace, s.runner_nomad_region,
                   *(str(p) if p else None for p in (s.runner_nomad_cacert, s.runner_nomad_client_cert,
                                                     s.runner_nomad_client_key)))


TIMEOUT = httpx.Timeout(60, connect=10)  # of one attempt, when no deadline is nearer
CLEANUP_WAIT_S = 30.0  # what a run spends deleting what it left, past its deadline if need be

# Nomad answers 500 for every error it has no code for, so its known permanent answers are not retried
_PERMANENT = ("not found", "no CSI plugin named", "no healthy controllers", "does not support", "volume in use",
              "volume exists", "Permission denied", "No path to region")


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, NomadError):
        return exc.status in (429, 500, 502, 503, 504) and not any(text in exc.text for text in _PERMANENT)
    # a request sent and not answered in time is not sent again, as on Kubernetes (kubeapi.URLLIB3_RETRIES): an
    # audit's hung create was sent 3 times, 60 s each, so the run ran into its timeout and lost every volume's time
    return isinstance(exc, httpx.TransportError) and not isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout))


class Nomad:
    """A thin httpx client: token, namespace, region and TLS from the config; requests counted by verb."""

    def __init__(self, cfg: NomadConfig, timeline: Timeline | None = None, pool_size: int = 32) -> None:
        self.cfg, self.timeline = cfg, timeline
        self.deadline: float | None = None  # time.monotonic() by which every call must have its answer, or fail
        headers = {"X-Nomad-Token": cfg.token} if cfg.token else {}
        cert = (cfg.client_cert, cfg.client_key) if cfg.client_cert else None
        self.http = httpx.Client(base_url=cfg.address.rstrip("/"), headers=headers, verify=cfg.cacert or True,
                                 cert=cert, timeout=TIMEOUT,
                                 limits=httpx.Limits(max_connections=pool_size, max_keepalive_connections=pool_size))

    def close(self) -> None:
        self.http.close()

    def request(self, verb: str, method: str, path: str, namespace: str | None = None, *, until: float | None = None,
                again: Callable[[BaseException], None] | None = None, **kwargs: Any) -> Any:
        """One API call, retried as Kubernetes' are (kubeapi.ATTEMPTS, the same waits) on 429, a 5xx that
        is not one of Nomad's permanent answers, and connection errors: both sides of a comparison then
        meet API trouble alike (an audit: one 500 lost a Nomad volume while Kubernetes retried, so Nomad
        came out with fewer objects). A re-sent create is safe: Nomad updates an identical volume.
        Every attempt is counted. No attempt outlasts `deadline`, no wait before one goes past it and none starts
        after it (an audit: a hung Nomad held a run with a 15 s timeout for 6 minutes, 60 s a read, 3 attempts a
        call), nor `until`, this call's own. `again(error)`: called before each attempt after the first
        (Timeline.resender)."""
        by = self.deadline if until is None else min(until, self.deadline or until)
        params = {"namespace": namespace or self.cfg.namespace, **kwargs.pop("params", {})}
        if self.cfg.region:
            params["region"] = self.cfg.region

        def attempt() -> Any:
            if self.timeline is not None:
                self.timeline.count(verb)
            resp = self.http.request(method, path, params=params, timeout=self._timeout(by), **kwargs)
            if resp.status_code >= 400:
                raise NomadError(resp.status_code, resp.text)
            return resp.json() if resp.content and resp.content.strip() not in (b"", b"null") else None

        try:
            return retries.call(attempt, f"nomad {verb}", attempts=ATTEMPTS, first_s=0.05, factor=4, max_s=1,
                                retry_on=_transient, again=again, by=by)
        except retries.Late as exc:  # its deadline came while it waited to be sent again: as if unanswered by then
            raise httpx.TimeoutException(str(exc)) from exc
        except httpx.TransportError as exc:  # refused after the retries: the run ends (each volume failed before)
            if unreachable(exc):
                raise Unreachable("nomad-unreachable", "Nomad", self.cfg.address, exc,
                                  "is it running? set PODTAX_RUNNER_NOMAD_ADDR to its address") from None
            raise

    def _late(self, by: float | None = None) -> bool:
        by = self.deadline if by is None else by
        return by is not None and time.monotonic() >= by

    def _timeout(self, by: float | None) -> httpx.Timeout:
        """One attempt's timeouts: TIMEOUT, cut to what is left before `by` (a deadline; none left: it fails)."""
        if by is None:
            return TIMEOUT
        left = by - time.monotonic()
        if left <= 0:
            raise httpx.TimeoutException("no time left before the deadline")
        return httpx.Timeout(min(TIMEOUT.read or left, left), connect=min(TIMEOUT.connect or left, left))

    def _plugin_ids(self) -> str:
        """'plugins: a, b' (or why they are not known), for the message about a missing one."""
        try:
            ids = sorted(str(p.get("ID")) for p in self.request("list", "GET", "/v1/plugins", params={"type": "csi"})
                         or [])
        except (httpx.HTTPError, NomadError) as exc:
            return f"its plugins could not be listed: {exc}"
        return f"plugins: {', '.join(ids)}" if ids else "it has no CSI plugin at all"

    def setup(self, what: str, call: Callable[[], Any]) -> Any:
        """`call()`, a set-up call of the run (`what`: 'the plugin check'), its failure ended in one line: Aborted
        naming Nomad, the call, its answer, how often it was sent and what to do (a refused list of the run's volumes
        escaped as executor-error, 'NomadError: 500 No cluster leader'); a 404 is re-raised for the caller to say."""
        try:
            return call()
        except httpx.TimeoutException as exc:  # no answer in time (a refused connection raised Unreachable)
            raise Aborted("nomad-unreachable", f"Nomad at {self.cfg.address} did not answer {what} ({exc}): "
                          f"set PODTAX_RUNNER_NOMAD_ADDR") from None
        except httpx.HTTPError as exc:  # it answered, not in HTTP (a protocol error), or broke the connection
            raise Aborted("nomad-error", f"Nomad at {self.cfg.address} gave no valid answer ({type(exc).__name__}: "
                          f"{exc}): is PODTAX_RUNNER_NOMAD_ADDR the address of Nomad's HTTP API?") from None
        except NomadError as exc:
            if exc.status == 404:
                raise
            if exc.status == 403:
                raise Aborted("nomad-forbidden", f"Nomad refused the request ({exc.text.strip()}): set "
                              f"PODTAX_RUNNER_NOMAD_TOKEN to a token allowed csi-write-volume") from None
            fix = (f"set PODTAX_RUNNER_NOMAD_REGION to its region, or leave it empty (it is {self.cfg.region!r})"
                   if "No path to region" in exc.text else "check that Nomad's servers answer and have a leader "
                   "(`nomad server members`), then run again")
            sent = f"sent {ATTEMPTS} times" if _transient(exc) else "not sent again: it would not help"
            raise Aborted("nomad-error", f"Nomad at {self.cfg.address} refused {what} ({exc}; {sent}): nothing "
                          f"was created; {fix}") from None

    def check_plugin(self, plugin_id: str) -> dict[str, Any]:
        """The plugin must exist, have a healthy controller and support creating volumes."""
        try:
            plugin = self.setup("the plugin check", lambda: self.request("get", "GET", f"/v1/plugin/csi/{plugin_id}"))
        except NomadError:  # 404: setup says the others
            raise Aborted("plugin-missing", f"Nomad has no CSI plugin {plugin_id!r} "
                          f"({self._plugin_ids()}): set plugin_id to one of them") from None
        if not plugin.get("ControllersHealthy"):
            raise Aborted("plugin-unhealthy", f"CSI plugin {plugin_id!r} has no healthy controller "
                          f"({plugin.get('ControllersHealthy', 0)}/{plugin.get('ControllersExpected', 0)})")
        return plugin

    def scrape(self) -> dict[str, float] | None:
        """HTTP requests the server counted, {"METHOD route code": n}, where it serves them in Prometheus
        format (podtax nomadsim: nomad_http_requests_total); None otherwise (a real Nomad has no such counter)."""
        try:
            resp = self.http.get("/v1/metrics", params={"format": "prometheus"}, timeout=10)
            totals = request_totals(resp.text, "nomad_http_requests_total", ("method", "path_template", "code"))
        except httpx.HTTPError:
            return None
        return totals if resp.status_code == 200 and totals else None

    def volume_ids(self, prefix: str, namespace: str | None = None) -> list[tuple[str, str]]:
        """(namespace, ID) of the CSI volumes whose ID starts with `prefix`; namespace `*`: in every one."""
        stubs = self.request("list", "GET", "/v1/volumes", namespace, params={"type": "csi", "prefix": prefix})
        return [(s.get("Namespace") or namespace or self.cfg.namespace, s["ID"]) for s in stubs or []]


def volume_prefix(campaign: str, label: str | None = None) -> str:
    return f"podtax-{campaign}-" + (f"{label}-" if label else "")


def volume_body(vol_id: str, namespace: str, p: VolumeChurn) -> dict[str, Any]:
    size = size_bytes(p.size)
    return {"Volumes": [{"ID": vol_id, "Name": vol_id, "Namespace": namespace, "PluginID": p.plugin_id,
                         "RequestedCapacityMin": size, "RequestedCapacityMax": size,
                         "RequestedCapabilities": [{"AccessMode": ACCESS_MODES[p.access_mode],
                                                    "AttachmentMode": "file-system"}],
                         "Parameters": {}, "Secrets": {}}]}


def run(nomad: Nomad, ctx: Context, p: VolumeChurn, tl: Timeline, measured: Callable[[], None] = lambda: None) -> None:
    """Execute one run into `tl`, then call `measured` (the work is done; what follows is cleanup, whose requests
    are not counted, as on Kubernetes); on any failure delete what this run created, then re-raise."""
    ns = ctx.namespace
    prefix = volume_prefix(ctx.run.campaign, ctx.label)
    ids = [f"{prefix}{i + 1:04d}" for i in range(p.count)]
    for vol_id in ids:
        tl.add(vol_id)
    lock = threading.Lock()
    failures: Counter[str] = Counter()
    nomad.deadline = ctx.deadline

    def failed(vol_id: str, detail: str, exc: BaseException | None = None) -> None:
        """A refused call fails its volume; one that timed out gives it up (a lower bound in its phase)."""
        ctx.check()  # past the deadline (a call cut short by it) or stopped: the run ends, not the object
        if isinstance(exc, NomadError) and exc.status == 403:  # the token's policy, the same for every volume
            raise Aborted("nomad-forbidden", f"Nomad at {nomad.cfg.address} refused the run's {detail} (its token "
                          f"may read, not write): set PODTAX_RUNNER_NOMAD_TOKEN to a token allowed csi-write-volume "
                          f"in namespace {ns}")
        fail_object(tl, vol_id, detail, exc)
        with lock:
            failures["unanswered" if timed_out(exc) else "refused"] += 1
            if aborted := too_many_failed("Nomad", failures, p.count, detail):
                raise aborted

    def create(vol_id: str) -> None:
        tl.mark(vol_id, "request_sent")
        try:
            body = nomad.request("create", "PUT", f"/v1/volume/csi/{vol_id}/create", ns,
                                 json=volume_body(vol_id, ns, p), again=tl.resender(vol_id, "request_sent", "create"))
        except (NomadError, httpx.HTTPError) as exc:
            failed(vol_id, f"create: {exc}", exc)
            return
        tl.mark(vol_id, "api_accepted")
        vol = ((body or {}).get("Volumes") or [{}])[0]
        tl.server(vol_id, "create_index", str(vol.get("CreateIndex", "")))
        tl.server(vol_id, "external_id", vol.get("ExternalID"))

    def delete(vol_id: str) -> None:
        if not tl.has(vol_id, "api_accepted"):
            return
        tl.mark(vol_id, "delete_requested")
        try:
            nomad.request("delete", "DELETE", f"/v1/volume/csi/{vol_id}/delete", ns,
                          again=tl.resender(vol_id, "delete_requested", "delete"))
        except (NomadError, httpx.HTTPError) as exc:
            if not (isinstance(exc, NomadError) and "volume not found" in exc.text):
                failed(vol_id, f"delete: {exc}", exc)
                return
        tl.mark(vol_id, "gone")

    try:
        with tl.setting_up():
            nomad.check_plugin(p.plugin_id)
            # a volume of one of the run's IDs that exists already (left by an earlier run): Nomad would answer its
            # create 200 without calling the plugin (it updates an identical volume), a provision of a few ms;
            # failed as Kubernetes' 409 is
            existing = {vol_id for _, vol_id in nomad.setup("the list of the run's volumes (GET /v1/volumes)",
                                                            lambda: nomad.volume_ids(prefix, ns))}
        for vol_id in sorted(existing.intersection(ids)):
            failed(vol_id, f"create: volume {ns}/{vol_id} exists already, left by an earlier run (Nomad answers "
                           f"an identical create without creating it): remove its leftovers with `podtax volumes "
                           f"cleanup --backend nomad --campaign {ctx.run.campaign}`, then run again")
        pool(ctx, create, [vol_id for vol_id in ids if vol_id not in existing], p.concurrency)
        pool(ctx, delete, ids, p.concurrency)
    except BaseException as exc:
        said = _clean_run(nomad, ctx, tl) if any("request_sent" in r.t for r in tl.objects.values()) else ""
        if said and isinstance(exc, Aborted):
            raise Aborted(exc.reason, f"{exc.detail}; {said}") from None
        raise
    measured()
    nomad.timeline = None
    tl.left_behind = sum(1 for r in tl.objects.values() if "api_accepted" in r.t and "gone" not in r.t)
    # a create that failed may still have made its volume (a 500 after Nomad created it, a client timeout):
    # the run's prefix is searched for leftovers then too (an audit found two such volumes left, uncounted)
    if tl.left_behind or any(r.error for r in tl.objects.values()):
        _clean_run(nomad, ctx, tl)


def _clean_run(nomad: Nomad, ctx: Context, tl: Timeline) -> str:
    """Delete what the run left (within cleanup's wait, a hung Nomad included); tl.left_behind is what stayed.
    Returns "" when nothing stayed, else what stayed or could not be deleted and how to remove it; each volume that
    stayed is logged with why (it was a count only)."""
    try:
        removed = cleanup(nomad, ctx.run.campaign, ctx.label, ctx.namespace, CLEANUP_WAIT_S)
        tl.left_behind = removed.left
        for line in removed.remaining:
            log.warning("run %s: still present: %s", ctx.run.run_id, line)
        what = f"{tl.left_behind} volume(s) still present after" if tl.left_behind else ""
    except Exception as exc:  # noqa: BLE001 - said, and never masks the run's own error
        maybe = [r.name for r in tl.objects.values() if "request_sent" in r.t and "gone" not in r.t]
        tl.left_behind = len(maybe)
        why = (f"Nomad at {nomad.cfg.address} did not answer" if isinstance(exc, httpx.TimeoutException)
               else "it could not be reached" if isinstance(exc, Unreachable) else f"{type(exc).__name__}: {exc}")
        what = (f"could not delete {len(maybe)} volume(s) ({', '.join(maybe[:3])}{', ...' if len(maybe) > 3 else ''}"
                f"; {why}) in")
    if not what:
        return ""
    said = (f"{what} the cleanup's {CLEANUP_WAIT_S:g} s: remove them with `podtax volumes cleanup --backend nomad "
            f"--campaign {ctx.run.campaign}`")
    log.warning("run %s: %s", ctx.run.run_id, said)
    return said


def selection(campaign: str | None = None, label: str | None = None) -> tuple[str, re.Pattern[str]]:
    """(list prefix, full-match pattern) of the volumes of one run, one campaign, or every podtax run."""
    if campaign and label:
        prefix = volume_prefix(campaign, label)
        return prefix, re.compile(re.escape(prefix) + r"[0-9]{4}")
    if campaign:
        prefix = volume_prefix(campaign)
        return prefix, re.compile(re.escape(prefix) + r"[0-9a-f]{10}-[0-9]{4}")
    return "podtax-", re.compile(r"podtax-[a-z0-9-]+-[0-9a-f]{10}-[0-9]{4}")


def cleanup(nomad: Nomad, campaign: str | None = None, label: str | None = None, namespace: str | None = None,
            wait_s: float = CLEANUP_WAIT_S) -> Removed:
    """Delete the CSI volumes of a run, a campaign, or every podtax run (namespace `*`: in every namespace);
    wait until they are gone, `wait_s` at most, every call included (a Nomad that does not answer a listing fails
    it with httpx.TimeoutException then). The deletes run side by side, and one that gets no answer in time leaves
    its volume, said in `remaining`, not the others (an audit: a hung delete ended the cleanup, the volumes after it
    stayed and `podtax volumes cleanup` blamed the address); it is not sent again. With more volumes than workers,
    each delete gets its share of the wait (cleanup.delete_share): 8 hung deletes held the 8 workers until the wait
    ran out, and every other volume was 'not tried', again at each new cleanup, as the listing came in the same
    order (the hung ones first). A delete whose turn came once the wait had run out is not sent, and said so."""
    prefix, pattern = selection(campaign, label)
    out = Removed()
    end = time.monotonic() + wait_s
    reserve = min(5.0, wait_s / 4)  # kept from the deletes for the last listing
    saved = nomad.deadline
    hung: set[tuple[str, str]] = set()
    unsent: set[tuple[str, str]] = set()  # not sent: the wait had run out
    said: dict[tuple[str, str], str] = {}  # refused: what became of its delete (cleanup.refused)
    went: set[tuple[str, str]] = set()  # deleted (or found gone) in this round
    share = wait_s  # a delete's time in this round: its share of what is left of the wait

    def ours() -> list[tuple[str, str]]:
        nomad.deadline = end
        return [(ns, v) for ns, v in nomad.volume_ids(prefix, namespace) if pattern.fullmatch(v)]

    def delete(volume: tuple[str, str]) -> None:
        ns, vol_id = volume
        if nomad._late():  # sent now, it would fail unsent as if it had got no answer
            unsent.add(volume)
            return
        unsent.discard(volume)
        try:
            nomad.request("delete", "DELETE", f"/v1/volume/csi/{vol_id}/delete", ns, until=time.monotonic() + share)
            out.names.append(f"nomad volume {ns}/{vol_id}")
            went.add(volume)
        except httpx.TimeoutException:
            hung.add(volume)
        except NomadError as exc:
            if "volume not found" not in exc.text:
                said[volume] = refused(str(exc).splitlines()[0], _transient(exc))
            else:
                went.add(volume)

    try:
        # a delete refused after its attempts is not sent again (every 0.2 s until the wait ran out, 60 s to
        # `podtax volumes cleanup`, a throttled Nomad was sent 3 requests a round)
        while todo := [v for v in ours() if v not in hung and v not in said]:
            nomad.deadline = end - reserve
            went.clear()
            share = delete_share(end - reserve, len(todo))
            with ThreadPoolExecutor(max_workers=min(WORKERS, len(todo)), thread_name_prefix="podtax-cp-clean") as ex:
                list(ex.map(delete, todo))
            if time.monotonic() >= end - reserve:
                break
            if went:  # some went: look again at once; else wait before sending again
                continue
            time.sleep(0.2)
        left = ours()
        out.left = len(left)
        out.remaining = [f"nomad volume {ns}/{vol_id}: " + _why_left((ns, vol_id), hung, unsent, said)
                         for ns, vol_id in left]
        return out
    finally:
        nomad.deadline = saved


def _why_left(volume: tuple[str, str], hung: set[tuple[str, str]], unsent: set[tuple[str, str]],
              refused: dict[tuple[str, str], str]) -> str:
    if volume in hung:
        return "its delete got no answer in time; it may stay"
    if volume in refused:
        return refused[volume]
    if volume in unsent:
        return "not tried: the wait ran out (deletes that got no answer held it)"
    return "not deleted: still listed"
