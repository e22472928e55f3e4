"""volume-churn on Nomad, the run: plugin health check, then `PUT /v1/volume/csi/:id/create` and
`DELETE /v1/volume/csi/:id/delete` with `concurrency` workers (both calls are synchronous in Nomad: they return once
the plugin answered); what a run leaves is deleted by prefix (nomad.cleanup). The client, the volumes' names and
bodies and the cleanup are in nomad.py. Nomad volumes have no Bound phase."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

import httpx
from podtax.nomad_in_use import held
from podtax.templates import VolumeChurn

from podtax_runner import retry as retries
from podtax_runner.controlplane import cleanup
from podtax_runner.controlplane import nomad as client
from podtax_runner.controlplane.apierrors import Unreachable, fail_object, timed_out, too_many_errors, too_many_failed
from podtax_runner.controlplane.common import Aborted, Context, pool
from podtax_runner.controlplane.nomad import Nomad, NomadError, volume_body, volume_prefix
from podtax_runner.controlplane.timeline import Timeline

log = logging.getLogger("podtax.runner.controlplane")


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
            raise Aborted("nomad-forbidden", client.forbidden(exc.text, f"the run's {detail.split(':')[0]} of "
                          f"{vol_id} at {nomad.cfg.address}", f"csi-write-volume in namespace {ns} and plugin read",
                          ns), call=detail.split(":")[0])
        fail_object(tl, vol_id, detail, exc)
        with lock:
            failures["unanswered" if timed_out(exc) else "refused"] += 1
            failures["delete"] += detail.startswith("delete:")
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
        # the answer's Index: its volume's CreateIndex is 0 from a real Nomad (the object before Raft stored it)
        tl.server(vol_id, "create_index", str((body or {}).get("Index") or vol.get("CreateIndex", "")))
        tl.server(vol_id, "external_id", vol.get("ExternalID"))

    def delete(vol_id: str) -> None:
        if not tl.has(vol_id, "api_accepted"):
            return
        tl.mark(vol_id, "delete_requested")
        resend, own = tl.resender(vol_id, "delete_requested", "delete"), [False]

        def again(exc: BaseException) -> None:  # own: an attempt's answer may have come after it took effect
            own[0] = own[0] or not retries.did_nothing(exc)
            resend(exc)

        try:
            nomad.request("delete", "DELETE", f"/v1/volume/csi/{vol_id}/delete", ns, again=again)
        except (NomadError, httpx.HTTPError) as exc:
            if not (isinstance(exc, NomadError) and "volume not found" in exc.text):
                failed(vol_id, f"delete: {exc}{held(str(exc))}", exc)  # what holds it: cleanup meets it too
                return
            if not own[0]:  # gone before this run's delete, or while its attempts were throttled (429: did nothing)
                tl.mark(vol_id, "gone")
                since = tl.now() - tl.objects[vol_id].t["api_accepted"]
                tl.fail(vol_id, f"deleted before this run's delete ({since:.1f} s after its create returned), not by "
                                f"this run: by another client (`nomad volume delete` or deregister); its times not "
                                f"counted")
                return
        tl.mark(vol_id, "gone")

    try:
        with tl.setting_up():
            nomad.check_plugin(p.plugin_id, ns)
            nomad.check_namespace(ns)
            # a volume of one of the run's IDs that exists already (left by an earlier run): Nomad would answer its
            # create 200 without calling the plugin (it updates an identical volume), a provision of a few ms;
            # failed as Kubernetes' 409 is
            existing = {vol_id for _, vol_id in nomad.setup("the list of the run's volumes (GET /v1/volumes)",
                                                            lambda: nomad.volume_ids(prefix, ns),
                                                            f"csi-list-volume in namespace {ns}", ns)}
        _leftovers(ctx, tl, sorted(existing.intersection(ids)), p.count, failures)
        pool(ctx, create, [vol_id for vol_id in ids if vol_id not in existing], p.concurrency)
        pool(ctx, delete, ids, p.concurrency)
    except BaseException as exc:
        said = _clean_run(nomad, ctx, tl) if any("request_sent" in r.t for r in tl.objects.values()) else ""
        cleanup.tell(exc, said)  # an Aborted's detail, else the error's cleanup.LEFT (dispatch's executor-error)
        raise
    measured()
    nomad.timeline = None
    tl.left_behind = sum(1 for r in tl.objects.values() if "api_accepted" in r.t and "gone" not in r.t)
    # a create that failed may still have made its volume (a 500 after Nomad created it, a client timeout):
    # the run's prefix is searched for leftovers then too (an audit found two such volumes left, uncounted)
    if tl.left_behind or any(r.error for r in tl.objects.values()):
        _clean_run(nomad, ctx, tl)


def _leftovers(ctx: Context, tl: Timeline, found: list[str], count: int, failures: Counter[str]) -> None:
    """Fail the run's volumes that exist already (left by an earlier run: Nomad would answer their identical creates
    200 without creating them), their creates not sent; more than the run's allowance of failures ends it before
    anything is sent, naming them and the command that removes them. Before, they were counted as refused calls:
    'Nomad refused 11 of 20 requests (last: create: volume ... exists already ...)', though none was sent
    (test_cp_nomad_leftovers). Fewer are deleted by this run's own cleanup (_clean_run: an object failed), as their
    errors say; before, each told the user to run the campaign's cleanup, which deletes the volumes of the campaign's
    runs in progress too (review r9 L3)."""
    if too_many_errors(len(found), count):
        names = ", ".join(f"{ctx.namespace}/{v}" for v in found[:3]) + (", ..." if len(found) > 3 else "")
        raise Aborted("leftovers", f"{len(found)} of the run's {count} volumes exist already ({names}), left by an "
                                   f"earlier run: Nomad would answer their creates without creating them, so none "
                                   f"was sent and nothing was created; remove them with "
                                   f"{campaign_cleanup(ctx.run.campaign)}, then run again")
    for vol_id in found:
        tl.fail(vol_id, f"create: volume {ctx.namespace}/{vol_id} exists already, left by an earlier run (Nomad "
                        f"answers an identical create without creating it): not sent; this run's cleanup deletes it")
    failures["leftover"] = len(found)


def _clean_run(nomad: Nomad, ctx: Context, tl: Timeline) -> str:
    """Delete what the run left (within cleanup's wait, a hung Nomad included); tl.left_behind is what stayed.
    Returns "" when nothing stayed, else what stayed or could not be deleted and how to remove it; each volume that
    stayed is logged with why (it was a count only)."""
    try:
        removed = client.cleanup(nomad, ctx.run.campaign, ctx.label, ctx.namespace, client.CLEANUP_WAIT_S)
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
    _say_unanswered(ctx, tl)
    if not what:
        return ""
    said = f"{what} the cleanup's {client.CLEANUP_WAIT_S:g} s: remove them with {campaign_cleanup(ctx.run.campaign)}"
    log.warning("run %s: %s", ctx.run.run_id, said)
    return said


def _say_unanswered(ctx: Context, tl: Timeline) -> None:
    """Log the creates that got no answer in time: Nomad goes on with a create whose client left (its HTTP handler's
    RPC is not cancelled), so such a volume may be registered after the run's cleanup looked for it, and stay. Before,
    nothing said so: the run's cleanup found nothing and left_behind read 0."""
    hung = [r.name for r in tl.objects.values() if "given_up" in r.t and "api_accepted" not in r.t]
    if hung:
        log.warning("run %s: %d create(s) got no answer in time (%s%s): Nomad may still make those volumes after this "
                    "run's cleanup; look for them later with %s",
                    ctx.run.run_id, len(hung), ", ".join(hung[:3]), ", ..." if len(hung) > 3 else "",
                    campaign_cleanup(ctx.run.campaign))


def campaign_cleanup(campaign: str) -> str:
    """The command that removes a campaign's Nomad leftovers, and when it is safe: it deletes every volume of the
    campaign, those of its runs in progress too (as the Kubernetes cleanup's words say)."""
    return (f"`podtax volumes cleanup --backend nomad --campaign {campaign}` once no run of campaign {campaign} is in "
            f"progress (it deletes every volume of the campaign, a running run's too)")
