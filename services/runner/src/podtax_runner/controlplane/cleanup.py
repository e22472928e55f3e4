"""Find and remove what control-plane runs created: Kubernetes objects by the `podtax.io/*` labels,
Nomad volumes by the `podtax-` name prefix (see nomad.py). Used by the executors when a run fails
or is stopped, and by `podtax volumes cleanup`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from kubernetes.client.rest import ApiException
from podtax.nomad_in_use import held

from podtax_runner.controlplane.apierrors import CALL_ERRORS, last_error, timed_out
from podtax_runner.controlplane.common import LABEL_CAMPAIGN, LABEL_RUN, NAME, Aborted, Context, campaign_token
from podtax_runner.controlplane.kubeapi import ATTEMPTS, Kube, Obj
from podtax_runner.controlplane.pv_owner import bound_to, claimed_by, made_by_hand, provisioned
from podtax_runner.controlplane.timeline import Timeline
from podtax_runner.retry import brief, transient

log = logging.getLogger("podtax.runner.controlplane")
CLEANUP_WAIT_S = 30.0  # how long a Kubernetes run's cleanup waits for what it left behind to go (kubernetes)
WORKERS = 8  # the cleanup's deletes in flight at once
DELETE_MIN_S = 1.0  # the least a delete is given before its worker takes the next, however many wait their turn
DELETED, GONE, HUNG, UNSENT = "deleted", "gone", "hung", "unsent"  # what became of a delete
REFUSED = "not deleted: its delete was refused:"  # then the answer (`refused`)
# why an object stayed, by what became of its delete (else its state: deleting, or still listed)
WHY = {HUNG: "its delete got no answer in time; it may stay",
       UNSENT: "not tried: the wait ran out (deletes that got no answer held it)"}
T = TypeVar("T")
MADE_BEFORE = "made beforehand, not by a provisioner"  # how a PV the cleanup leaves to its owner is said (made_before)


@dataclass
class Removed:
    names: list[str] = field(default_factory=list)  # "kind namespace/name" of each object deleted
    left: int = 0  # objects (claims, pods, PVs of deleted claims) still present after waiting
    kept: int = 0  # of them, PVs made beforehand (provisioned): their owner's, not what a run left behind
    remaining: list[str] = field(default_factory=list)  # each object still present: which, and why
    unlisted: list[str] = field(default_factory=list)  # each list that got no answer in time: what it left, and why


def _items(kube: Kube, namespaced: object, everywhere: object, namespace: str | None, selector: str) -> list[Obj]:
    if namespace:
        return kube.call("list", namespaced, namespace, label_selector=selector).get("items") or []
    return kube.call("list", everywhere, label_selector=selector).get("items") or []


def _listed(out: Removed, what: str, then: str, list_: Callable[[], T]) -> T | None:
    """`list_()`, or None when it got no answer in time (by the cleanup's wait, at least kubeapi.READ_MIN_S): said in
    `out.unlisted` (`what` was not listed, so `then`). Before, a hung list held the cleanup 60 s a call, past its
    wait, and then ended it: what came after it was neither deleted nor said."""
    try:
        return list_()
    except CALL_ERRORS as exc:
        if not timed_out(exc):
            raise
        out.unlisted.append(f"{what}: not listed, the list got no answer in time ({type(last_error(exc)).__name__}: "
                            f"{last_error(exc)}), so {then}")
        return None


def _delete(kube: Kube, fn: object, name: str, ns: str, until: float) -> str:
    return _deleted(kube, fn, name, until, ns, grace_period_seconds=0)


def _delete_pv(kube: Kube, name: str, until: float) -> str:
    return _deleted(kube, kube.core.delete_persistent_volume, name, until)


def refused(answer: str, retried: bool, sent: int = ATTEMPTS) -> str:
    """What became of a delete the API refused (REFUSED), for `remaining`: its answer and how often it was sent
    (`retried`: the answer is one calls are sent again after, `sent` times in all), and what holds it when known
    (podtax.nomad_in_use: a cleanup sent again would meet the same answer until that is done)."""
    return f"{REFUSED} {answer} ({f'sent {sent} times' if retried else 'not sent again'}){held(answer)}"


def _deleted(kube: Kube, fn: object, name: str, until: float, *args: object, **kwargs: object) -> str:
    """Delete `name` (its answer awaited until `until`): DELETED, GONE (404), HUNG when it got no answer in time
    (it stays: the wait below counts it left, where a timeout ended the cleanup, and with it the run it cleaned up
    after), or `refused` when the API refused it after its attempts (a 429 at each: the ApiException ended the whole
    cleanup, the objects deleted meanwhile unsaid and the one left unnamed)."""
    try:
        kube.call("delete", fn, name, *args, until=until, **kwargs)
        return DELETED
    except ApiException as exc:
        if exc.status == 404:
            return GONE
        log.info("cleanup: the delete of %s was refused: %s", name, brief(exc))  # said in `remaining`
        return refused(brief(exc), transient(exc), getattr(exc, "podtax_sent", ATTEMPTS))
    except CALL_ERRORS as exc:
        if not timed_out(exc):
            raise
        log.warning("cleanup: the delete of %s got no answer in time (%s); it may stay", name, exc)
        return HUNG


def delete_share(deadline: float, n: int) -> float:
    """The time each of `n` deletes sent WORKERS at a time gets before its worker takes the next: its share of what
    is left before `deadline`, at least DELETE_MIN_S (Nomad's cleanup too)."""
    return max(DELETE_MIN_S, (deadline - time.monotonic()) / -(-n // WORKERS))


def _side_by_side(deadline: float, deletes: list[Callable[[float], str]]) -> list[str]:
    """Call `deletes` WORKERS at a time, each given its share of what is left before `deadline` (at least
    DELETE_MIN_S) before its worker takes the next; one whose turn comes past `deadline` is not sent (UNSENT: the
    wait counts its object left). One after another, each hung DELETE held the cleanup its 60 s read timeout,
    unbounded by its wait; side by side without a share, 8 hung ones held every worker until the wait ran out, and
    the deletes after them were never sent, at each new cleanup again."""
    if not deletes:
        return []
    share = delete_share(deadline, len(deletes))

    def send(delete: Callable[[float], str]) -> str:
        now = time.monotonic()
        return delete(min(deadline, now + share)) if now < deadline else UNSENT

    with ThreadPoolExecutor(max_workers=min(WORKERS, len(deletes)), thread_name_prefix="podtax-cp-clean") as ex:
        return list(ex.map(send, deletes))


def _what_became(done: str) -> str:
    """Why an object whose delete was sent is still present, from what became of it ('' when it was answered)."""
    return WHY.get(done, "") or (done if done.startswith(REFUSED) else "")


def _state(obj: Obj) -> str:
    """Why a pod or claim whose delete was answered is still listed."""
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return f"deleting, held by finalizers {', '.join(meta.get('finalizers') or []) or '(none)'}"
    return "not deleted: still listed"


def _orphans(kube: Kube, namespace: str | None, selector: str, claims: set[tuple[str, str]]) -> tuple[
        list[Obj], list[Obj], list[Obj]]:
    """PVs whose claim (a control-plane run's, by its name: common.NAME) is gone although the PV stayed (Released:
    its deletion stuck, or reclaim policy Retain), in `namespace` or everywhere: (those of `selector` a provisioner
    made, those that may be `selector`'s, those of `selector` made beforehand: not provisioned, never deleted). A PV
    carries no labels, so under a run's selector it is told by the run token of its claim's name, under a campaign's
    by the campaign token; a name of the old naming has none, so it only may be the campaign's."""
    core = kube.core
    present = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in _items(
        kube, core.list_namespaced_persistent_volume_claim, core.list_persistent_volume_claim_for_all_namespaces,
        namespace, "")}
    labels = dict(kv.split("=", 1) for kv in selector.split(","))
    run, campaign = labels.get(LABEL_RUN), labels.get(LABEL_CAMPAIGN)
    token = campaign_token(campaign) if campaign else None
    ours: list[Obj] = []
    unsure: list[Obj] = []
    made: list[Obj] = []
    for pv in kube.call("list", core.list_persistent_volume).get("items") or []:
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        key = (ref.get("namespace"), ref.get("name"))
        m = NAME.fullmatch(ref.get("name") or "")
        if not m or (namespace and key[0] != namespace) or key in present or key in claims:
            continue
        if (m["run"] == run) if run else (not token or m["campaign"] == token):
            (ours if provisioned(pv) else made).append(pv)
        elif not run and m["campaign"] is None:
            unsure.append(pv)
    return ours, unsure, made


def _why(pv: Obj, became: dict[str, str] | None = None) -> str:
    """A PV still present, in which state, of which claim; and what became of its delete when it was sent."""
    spec, meta = pv.get("spec") or {}, pv.get("metadata") or {}
    ref = spec.get("claimRef") or {}
    state = (pv.get("status") or {}).get("phase", "?")
    if meta.get("deletionTimestamp"):
        state = f"deleting, held by finalizers {', '.join(meta.get('finalizers') or [])}"
    done = (became or {}).get(f"persistentvolume {meta.get('name')}", "")
    return (f"persistentvolume {meta.get('name')} ({state}; reclaim policy {spec.get('persistentVolumeReclaimPolicy')})"
            f" of claim {ref.get('namespace')}/{ref.get('name')}" + (f": {_what_became(done)}" if _what_became(done)
                                                                     else ""))


def made_before(pv: Obj, gone: bool = False) -> str:
    """Why a cleanup leaves a PV a podtax claim bound that no provisioner made (provisioned), and what its owner may
    do: it was there before the run, so it is not the run's to delete (a cleanup deleted it: the claimRef's name
    carried the run's token)."""
    name = (pv.get("metadata") or {}).get("name")
    return (f"{_why(pv)}{', which is gone' if gone else ''}: {MADE_BEFORE} for this run ("
            f"{made_by_hand(pv)}), so the cleanup leaves it to its owner: delete it (`kubectl delete persistentvolume "
            f"{name}`), or make it Available again (`kubectl patch persistentvolume {name} --type json -p "
            f"'[{{\"op\":\"remove\",\"path\":\"/spec/claimRef\"}}]'`)")


def _unsure(pv: Obj) -> str:
    """Why --campaign leaves a PV whose podtax claim, of the old naming, is gone, and the commands that remove it.
    Its campaign cannot be told: a PV carries no labels, its claimRef holds only the claim's name and namespace,
    an old name's only token is sha1(run id)[:10] (one-way; the run ids live in the runner's plan, not on the
    cluster) and the namespace is the runner's, shared by every campaign. Names since carry the campaign's token
    (common.object_name)."""
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    return (f"{_why(pv)}, which is gone: --campaign leaves it, as which campaign it was cannot be told (a PV carries "
            f"no labels, and its claim's name, of the naming before campaign tokens, holds only a hash of the run "
            f"id, which is one-way); remove it alone with `kubectl delete persistentvolume {pv['metadata']['name']}`, "
            f"or with every podtax leftover in namespace {ref.get('namespace')}, of any campaign, with `podtax volumes "
            f"cleanup --backend kubernetes --namespace {ref.get('namespace')}` (same --kubeconfig; it also deletes "
            f"the claims and pods of control-plane runs in progress there, so run it when none is)")


def kubernetes(kube: Kube, namespace: str | None, selector: str, wait_s: float = 30,
               volumes: Collection[str] = ()) -> Removed:
    """Delete pods and claims matching `selector` (in `namespace`, or everywhere) and the PVs left of such
    claims that are gone (_orphans), side by side, then wait for them, the PVs bound to the claims and the
    PVs named in `volumes` (of claims deleted before, whose deletion a run gave up waiting for) to be gone.
    What stays is counted in `left`, each PV said in `remaining` (an audit: 7 Released PVs stayed and
    `podtax volumes cleanup` said "removed 0 object(s)"); a PV made beforehand (not provisioned: a claim bound it as
    Kubernetes binds a matching Available PV before it provisions) is neither deleted nor waited for, said in
    `remaining` and counted in `left` (it was deleted as the run's own). Its requests are not counted in `kube`'s
    timeline: they are not the run's work (an audit: a run's LISTs while waiting 30 s for a PV left behind made its
    requests_per_object 24.2 against 2.3). All within `wait_s` (a delete within its share of it, _side_by_side) but
    for the lists in flight then (each at most kubeapi.READ_MIN_S: Kube.reads_by): a delete whose turn comes later
    is not sent. Each pod, claim and PV still present is said in `remaining` with why. A list
    that gets no answer in time is said in `unlisted` with what it left undeleted or unchecked, and the cleanup goes
    on without it (before, a hung list held it 60 s, then ended it: what came after was neither deleted nor said)."""
    kube = Kube(kube.api)  # the same cluster, no timeline: nothing counted
    core = kube.core
    out = Removed()
    deadline = kube.reads_by = time.monotonic() + wait_s
    where = f"{selector} in namespace {namespace}" if namespace else f"{selector} in every namespace"
    not_deleted = "none of them was deleted: they may stay"
    pods = [p["metadata"] for p in _listed(out, f"pods of {where}", not_deleted, lambda: _items(
        kube, core.list_namespaced_pod, core.list_pod_for_all_namespaces, namespace, selector)) or []]
    became: dict[str, str] = {}  # "kind namespace/name" -> what became of its delete
    for m, done in zip(pods, _side_by_side(deadline, [
            lambda until, m=m: _delete(kube, core.delete_namespaced_pod, m["name"], m["namespace"], until)
            for m in pods])):
        became[f"pod {m['namespace']}/{m['name']}"] = done
        if done == DELETED:
            out.names.append(f"pod {m['namespace']}/{m['name']}")
    claims = [c["metadata"] for c in _listed(out, f"claims of {where}", not_deleted, lambda: _items(
        kube, core.list_namespaced_persistent_volume_claim, core.list_persistent_volume_claim_for_all_namespaces,
        namespace, selector)) or []]
    # claims: their PVs (even ones provisioned after this) must go too
    deleted: set[tuple[str, str]] = {(m["namespace"], m["name"]) for m in claims}
    for m, done in zip(claims, _side_by_side(deadline, [
            lambda until, m=m: _delete(kube, core.delete_namespaced_persistent_volume_claim, m["name"],
                                       m["namespace"], until)
            for m in claims])):
        became[f"persistentvolumeclaim {m['namespace']}/{m['name']}"] = done
        if done.startswith(REFUSED):  # it stays, and its PV with it: neither is waited for
            deleted.discard((m["namespace"], m["name"]))
        if done == DELETED:
            out.names.append(f"persistentvolumeclaim {m['namespace']}/{m['name']}")
    orphans, unsure, made = _listed(out, f"persistent volumes whose claim of {where} is gone", not_deleted,
                                    lambda: _orphans(kube, namespace, selector, deleted)) or ([], [], [])
    volumes = {*volumes, *(pv["metadata"]["name"] for pv in orphans)}
    made_names = {pv["metadata"]["name"] for pv in made}
    for pv, done in zip(orphans, _side_by_side(deadline, [
            lambda until, pv=pv: _delete_pv(kube, pv["metadata"]["name"], until) for pv in orphans])):
        became[f"persistentvolume {pv['metadata']['name']}"] = done
        if done == DELETED:
            ref = pv["spec"]["claimRef"]
            out.names.append(f"persistentvolume {pv['metadata']['name']} (of claim {ref['namespace']}/{ref['name']}, "
                             "which was gone)")
    out.remaining = [*(_unsure(pv) for pv in unsure), *(made_before(pv, gone=True) for pv in made)]
    unknown = "whether they are gone is not known: they may stay"
    while True:
        found = [_listed(out, f"pods of {where}", unknown, lambda: _items(
                     kube, core.list_namespaced_pod, core.list_pod_for_all_namespaces, namespace, selector)),
                 _listed(out, f"claims of {where}", unknown, lambda: _items(
                     kube, core.list_namespaced_persistent_volume_claim,
                     core.list_persistent_volume_claim_for_all_namespaces, namespace, selector))]
        pvs: list[Obj] | None = []
        if deleted or volumes:
            pvs = _listed(out, "the persistent volumes of the deleted claims", unknown, lambda: [
                pv for pv in kube.call("list", core.list_persistent_volume).get("items") or []
                if claimed_by(pv, deleted) or pv["metadata"]["name"] in volumes])
        # a PV made beforehand is not waited for: it is not deleted (Failed, or Released), and not the run's to delete
        stayed = None if pvs is None else [pv for pv in pvs if provisioned(pv) and (
            bound_to(pv, deleted) or pv["metadata"]["name"] in volumes)]
        kept = [pv for pv in pvs or [] if not provisioned(pv) and pv["metadata"]["name"] not in made_names]
        left = sum(len(items) for items in found if items is not None)
        out.kept = len(kept) + len(made)
        out.left = left + len(stayed or []) + len(unsure) + out.kept
        # a refused delete's object stays: no use waiting for it
        waited = sum(not became.get(key, "").startswith(REFUSED) for key, _ in _keyed(found))
        if stayed is None or None in found or not waited and not stayed or time.monotonic() > deadline:
            out.remaining = [*_stayed(found, became), *(_why(pv, became) for pv in stayed or []),
                             *(made_before(pv) for pv in kept), *out.remaining]
            return out
        time.sleep(0.2)


def _stayed(found: list[list[Obj] | None], became: dict[str, str]) -> list[str]:
    """Each pod and claim still listed (found: the wait's last lists), with why."""
    return [f"{key}: {_what_became(became.get(key, '')) or _state(obj)}" for key, obj in _keyed(found)]


def _keyed(found: list[list[Obj] | None]) -> list[tuple[str, Obj]]:
    """("kind namespace/name", object) of each pod and claim listed (found: pods, claims)."""
    return [(f"{kind} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}", obj)
            for kind, items in zip(("pod", "persistentvolumeclaim"), found, strict=True) for obj in items or []]


def end_of_run(kube: Kube, ctx: Context, timeline: Timeline, left: int, volumes: Collection[str] = ()) -> None:
    """Delete what a run left once its work is done (measured; `volumes` as for kubernetes), waiting up to
    CLEANUP_WAIT_S; timeline.left_behind is what stayed. A cleanup that fails (the API gone, or not answering, after
    the work) is logged and `left`, what the run knows it left, recorded instead, as Nomad's run does (nvolumes.
    _clean_run): it never fails a run whose timeline is complete (an audit: it ended as kubernetes-no-answer). A list
    that got no answer in time leaves what it did not list: said, and `left` counted if more than what was seen."""
    try:
        removed = kubernetes(kube, ctx.namespace, ctx.selector, wait_s=CLEANUP_WAIT_S, volumes=volumes)
        # a PV made beforehand is its owner's: not left behind by the run (the cleanup, by design, leaves it)
        timeline.left_behind = max(removed.left - removed.kept, left) if removed.unlisted else \
            removed.left - removed.kept
        _say_unlisted(ctx, removed)
    except Exception as exc:  # noqa: BLE001 - said; the run's measurements stand
        timeline.left_behind = left
        log.warning("run %s: its cleanup failed (%s: %s), %d object(s) may stay: remove them with `podtax volumes "
                    "cleanup --backend kubernetes`", ctx.run.run_id, type(exc).__name__, exc, left)


def _say_unlisted(ctx: Context, removed: Removed) -> None:
    """Log each list that got no answer and each object that stayed (a count only before), with the command."""
    for line in removed.unlisted:
        log.warning("run %s: its cleanup did not clean everything: %s; remove what stays with `podtax volumes cleanup "
                    "--backend kubernetes --campaign %s`", ctx.run.run_id, line, ctx.run.campaign)
    for line in removed.remaining:
        if MADE_BEFORE in line:  # its owner's to remove: the line says how
            log.warning("run %s: still present: %s", ctx.run.run_id, line)
        else:
            log.warning("run %s: still present: %s; remove it with `podtax volumes cleanup --backend kubernetes "
                        "--campaign %s`", ctx.run.run_id, line, ctx.run.campaign)


def after_failure(kube: Kube, ctx: Context, timeline: Timeline) -> str:
    """Delete what a failed or stopped run created (waiting up to CLEANUP_WAIT_S for it to go); a cleanup error is
    logged, never masks the run's. Returns "" when nothing stayed, else what stayed and how to remove it, for the
    run's failure (told): before, a run whose cleanup left claims failed saying "Stopped and removed what was
    created", the count and the command only in the runner's log (a Nomad run's failure said them: nvolumes)."""
    fix = f"remove them with `podtax volumes cleanup --backend kubernetes --campaign {ctx.run.campaign}`"
    try:
        removed = kubernetes(kube, ctx.namespace, ctx.selector, wait_s=CLEANUP_WAIT_S)
        timeline.left_behind = removed.left - removed.kept
        _say_unlisted(ctx, removed)
    except Exception as exc:  # noqa: BLE001 - the first error is the one to report
        log.warning("cleanup of run %s failed (%s): run `podtax volumes cleanup --backend kubernetes`",
                    ctx.run.run_id, exc)
        return f"its cleanup failed ({type(exc).__name__}: {brief(exc)[:200]}), what it created may stay: {fix}"
    if removed.unlisted:
        return f"its cleanup left what it could not list ({removed.unlisted[0][:300]}): {fix}"
    if not removed.left - removed.kept:
        return ""
    said = [line for line in removed.remaining if MADE_BEFORE not in line][:1]
    first = f" (first: {said[0][:300]})" if said else ""
    return (f"{removed.left - removed.kept} object(s) still present after the cleanup's {CLEANUP_WAIT_S:g} s{first}: "
            f"{fix}")


LEFT = "podtax_left"  # the attribute of a run's error (not Aborted) holding what its cleanup left (told)


def tell(exc: BaseException, said: str) -> None:
    """Add `said` (what a failed run's cleanup left: after_failure) to the run's error: an Aborted's detail, else
    the attribute LEFT, which execute adds to the failure it makes of that error."""
    if not said:
        return
    if isinstance(exc, Aborted):
        exc.detail = f"{exc.detail}; {said}"
        exc.args = (exc.detail,)
    else:
        setattr(exc, LEFT, said)


def executor_error(exc: BaseException) -> str:
    """The detail of a run's executor-error failure (an error not Aborted): the error, then what the run's cleanup left
    and how to remove it (LEFT, put there by tell). It said the error only: '...; 22 object(s) still
    present after the cleanup's 30 s ...: remove them with ...' was lost on this path (review r2)."""
    left = getattr(exc, LEFT, "")
    return f"{type(exc).__name__}: {exc}" + (f"; {left}" if left else "")
