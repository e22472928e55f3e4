"""Nomad for volume-churn: its HTTP client (token, namespace, region, TLS; retries; set-up refusals in one line),
the plugin check, the volumes' names and bodies, and the cleanup of what runs left. Volume IDs are
`podtax-<campaign>-<run>-<nnnn>`, so leftovers are found by prefix. The run itself is in nvolumes.py."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from podtax.config import RunnerSettings
from podtax.templates import VolumeChurn

from podtax_runner import retry as retries
from podtax_runner.controlplane.apierrors import Unreachable, unreachable
from podtax_runner.controlplane.cleanup import WORKERS, Removed, delete_share, refused
from podtax_runner.controlplane.common import Aborted
from podtax_runner.controlplane.kubeapi import ATTEMPTS, THROTTLED_ATTEMPTS, request_totals
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


def forbidden(text: str, what: str, needs: str, namespace: str) -> str:
    """A 403's cause and fix, in one line: `what` (a call of the run) needs `needs`. Nomad answers 'ACL token not
    found' for a token it does not know, 'Permission denied' for one whose policy lacks the capability (or for no
    token). Before, every 403 said 'set ... a token allowed csi-write-volume', also where the plugin check wanted
    plugin read and the token had csi-write-volume, and where the token was expired or mistyped."""
    if "ACL token not found" in text:
        return (f"Nomad does not know the run's token (ACL token not found; {what}): PODTAX_RUNNER_NOMAD_TOKEN is "
                f"mistyped, expired or deleted (`NOMAD_TOKEN=... nomad acl token self` says): set it to a live token")
    return (f"Nomad refused {what} ({text.strip()[:200]}: it needs {needs}): set PODTAX_RUNNER_NOMAD_TOKEN to a token "
            f"whose policy grants namespace \"{namespace}\" {{ capabilities = [\"csi-write-volume\", "
            f"\"csi-list-volume\"] }} and plugin {{ policy = \"read\" }}")


class NomadError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status} {text.strip()[:200]}")
        self.status, self.text, self.sent = status, text, 1  # sent: attempts of the call (Nomad.request sets it)


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

# Nomad answers 500 for every error it has no code for, so its known permanent answers are not retried (also
# CSIVolume.Create's: Merge's `volume name cannot be updated` and its kind, Validate's `validation: ...`, a node-only
# plugin's `plugin has no controller`; each was sent 3 times, test_cp_nomad_permanent)
_PERMANENT = ("not found", "no CSI plugin named", "no healthy controllers", "does not support", "volume in use",
              "volume exists", "Permission denied", "No path to region", "nonexistent namespace", "cannot be updated",
              "validation: ", "plugin has no controller")


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
        came out with fewer objects). A re-sent create is safe: Nomad updates an identical volume. An answer that
        did nothing (its connection limit's 429: retry.did_nothing) is sent up to THROTTLED_ATTEMPTS times, as on
        Kubernetes (it was 3: a DELETE throttled 3 times in a row failed its volume). A NomadError's `sent`: attempts.
        Every attempt is counted. No attempt outlasts `deadline`, no wait before one goes past it and none starts
        after it (an audit: a hung Nomad held a run with a 15 s timeout for 6 minutes, 60 s a read, 3 attempts a
        call), nor `until`, this call's own. `again(error)`: called before each attempt after the first
        (Timeline.resender)."""
        by = self.deadline if until is None else min(until, self.deadline or until)
        params = {"namespace": namespace or self.cfg.namespace, **kwargs.pop("params", {})}
        if self.cfg.region:
            params["region"] = self.cfg.region

        sent = [0]

        def attempt() -> Any:
            if self.timeline is not None:
                self.timeline.count(verb)
            sent[0] += 1
            resp = self.http.request(method, path, params=params, timeout=self._timeout(by), **kwargs)
            if resp.status_code >= 400:
                error = NomadError(resp.status_code, resp.text)
                error.sent = sent[0]
                raise error
            return resp.json() if resp.content and resp.content.strip() not in (b"", b"null") else None

        try:
            return retries.call(attempt, f"nomad {verb}", attempts=ATTEMPTS, first_s=0.05, factor=4, max_s=1,
                                retry_on=_transient, again=again, by=by, patient=retries.did_nothing,
                                patient_attempts=THROTTLED_ATTEMPTS)
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

    def setup(self, what: str, call: Callable[[], Any], needs: str = "", namespace: str | None = None) -> Any:
        """`call()`, a set-up call of the run (`what`: 'the plugin check'), its failure ended in one line: Aborted
        naming Nomad, the call, its answer, how often it was sent and what to do (a refused list of the run's volumes
        escaped as executor-error, 'NomadError: 500 No cluster leader'); a 404 is re-raised for the caller to say.
        A 403: the ACL grant the call `needs` in the run's `namespace` (forbidden)."""
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
                raise Aborted("nomad-forbidden", forbidden(exc.text, what, needs or "read access",
                                                           namespace or self.cfg.namespace)) from None
            fix = (f"set PODTAX_RUNNER_NOMAD_REGION to its region, or leave it empty (it is {self.cfg.region!r})"
                   if "No path to region" in exc.text else "check that Nomad's servers answer and have a leader "
                   "(`nomad server members`), then run again")
            sent = f"sent {exc.sent} times" if _transient(exc) else "not sent again: it would not help"
            raise Aborted("nomad-error", f"Nomad at {self.cfg.address} refused {what} ({exc}; {sent}): nothing "
                          f"was created; {fix}") from None

    def check_plugin(self, plugin_id: str, namespace: str | None = None) -> dict[str, Any]:
        """The plugin must exist, run a controller, have a healthy one and support creating volumes; else Aborted,
        before anything is created, naming the fix."""
        try:
            plugin = self.setup(f"the plugin check (GET /v1/plugin/csi/{plugin_id})", lambda: self.request(
                "get", "GET", f"/v1/plugin/csi/{plugin_id}"), 'plugin { policy = "read" }', namespace)
        except NomadError:  # 404: setup says the others
            raise Aborted("plugin-missing", f"Nomad has no CSI plugin {plugin_id!r} "
                          f"({self._plugin_ids()}): set plugin_id to one of them") from None
        fix = "set plugin_id to a plugin whose controller creates volumes (`nomad plugin status` lists them)"
        healthy, expected = plugin.get("ControllersHealthy", 0), plugin.get("ControllersExpected", 0)
        if plugin.get("ControllerRequired") is False:  # Create answers 'plugin has no controller' to each volume
            if expected and not healthy:  # Nomad sets ControllerRequired once a controller fingerprints (AddPlugin)
                raise Aborted("plugin-unhealthy", f"CSI plugin {plugin_id!r}: its controller is not running yet "
                              f"({healthy}/{expected}): wait for or start its controller job")
            raise Aborted("plugin-cannot-create", f"CSI plugin {plugin_id!r} runs no controller (a node-only plugin: "
                          f"ControllerRequired false), so Nomad cannot create its volumes: {fix}")
        if not healthy:
            raise Aborted("plugin-unhealthy", f"CSI plugin {plugin_id!r} has no healthy controller "
                          f"({healthy}/{expected})")
        self._check_create(plugin_id, plugin, fix)
        return plugin

    @staticmethod
    def _check_create(plugin_id: str, plugin: dict[str, Any], fix: str) -> None:
        """Refuse a plugin none of whose controllers supports CREATE_DELETE_VOLUME: each create was answered 500
        'plugin does not support creating volumes' until 11 had failed ("Nomad refused 11 of 20 requests"). Nomad asks
        one controller (CSIPlugin.HasControllerCapability: the first of a Go map, no fixed order), so controllers that
        differ are said (some creates may be refused), not refused."""
        said = [(info.get("ControllerInfo") or {}).get("SupportsCreateDelete")
                for info in (plugin.get("Controllers") or {}).values()]
        said = [s for s in said if s is not None]
        if said and not any(said):
            raise Aborted("plugin-cannot-create", f"CSI plugin {plugin_id!r} does not support creating volumes (its "
                          f"controller lacks CREATE_DELETE_VOLUME; volumes of it are registered, not created): {fix}")
        if not all(said):
            log.warning("CSI plugin %r: %d of its %d controllers support creating volumes (CREATE_DELETE_VOLUME), the "
                        "others not; Nomad asks one of them, in no fixed order, so some creates may be refused 'plugin "
                        "does not support creating volumes': run one version of the plugin", plugin_id, sum(said),
                        len(said))

    def check_namespace(self, namespace: str) -> None:
        """The run's namespace must exist. Nomad checks it only when it registers a created volume, after its plugin
        made it (nomad/csi_endpoint.go Create, then the state store's UpsertCSIVolume): each create into a namespace
        that does not exist left a volume in the storage that Nomad does not know of, so no cleanup finds it, and
        the run ended as api-errors after 11 volumes ('500 ... is in nonexistent namespace ...'), no fix named."""
        what = f"the check of namespace {namespace} (GET /v1/namespace/{namespace})"
        try:
            self.setup(what, lambda: self.request("get", "GET", f"/v1/namespace/{namespace}"),
                       f"a capability in namespace {namespace}", namespace)
        except NomadError:  # 404 Namespace not found (setup says the others)
            try:
                names = sorted(str(n.get("Name")) for n in self.request("list", "GET", "/v1/namespaces") or [])
                known = f"namespaces: {', '.join(names)}"
            except (httpx.HTTPError, NomadError) as exc:
                known = f"its namespaces could not be listed: {exc}"
            raise Aborted("namespace-missing", f"Nomad has no namespace {namespace!r} ({known}): set the run's "
                          f"namespace (its template's `namespace`, or PODTAX_RUNNER_NOMAD_NAMESPACE) to one of them, "
                          f"or create it (`nomad namespace apply {namespace}`); nothing was created") from None

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
                said[volume] = refused(str(exc).splitlines()[0], _transient(exc), exc.sent)
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
