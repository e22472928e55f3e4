"""What every control-plane executor shares: the run context, names and labels, a worker pool that
stops early, and waiting on the timeline. How a failed API call is read: apierrors; ObjectChurn: churn."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from podtax import events

from podtax_runner.controlplane.timeline import run_label

T = TypeVar("T")
log = logging.getLogger("podtax.runner.controlplane")
LABEL_CAMPAIGN = "podtax.io/campaign"
LABEL_RUN = "podtax.io/run"
LABEL_KIND = "podtax.io/kind"
# one value per execution of a run (Context.attempt): tells the objects this execution made from those an earlier
# execution of the same run left, which carry the same names and labels (kubeapi.stored_before)
ANNOTATION_ATTEMPT = "podtax.io/attempt"
KIND = "control-plane"  # sets these objects apart from pod runs' Jobs, which carry the same campaign label
MANAGED = {"app.kubernetes.io/managed-by": "podtax"}
WAIT_STEP_S = 0.02
# a Kubernetes object of a run (object_name): kind, campaign token, run token, number; names of the old naming
# (before campaign tokens) lack the campaign token, so `campaign` is None for them
NAME = re.compile(r"podtax-(?P<kind>[a-z]+)-(?:(?P<campaign>[0-9a-f]{8})-)?(?P<run>[0-9a-f]{10})-[0-9]{4,5}")


def campaign_token(campaign: str) -> str:
    """The campaign's token in object names: sha1 of its `podtax.io/campaign` label value (the name cut to 63,
    which a campaign name never exceeds), so a cleanup that holds only the label selector finds the same token."""
    return hashlib.sha1(campaign[:63].encode()).hexdigest()[:8]


def object_name(kind: str, campaign: str, run_id: str, i: int) -> str:
    """`podtax-<kind>-<sha1(campaign)[:8]>-<sha1(run id)[:10]>-<nnnn>` (5 digits for the 10,000th, a count's
    limit), at most 11 + 8 + 1 + 10 + 1 + 5 = 36 characters (a DNS label may have 63). The campaign token lets
    `podtax volumes cleanup --campaign` tell the campaign of a PV whose claim is gone: the PV's claimRef keeps
    only the claim's name and namespace."""
    return f"podtax-{kind}-{campaign_token(campaign)}-{run_label(run_id)}-{i:04d}"


class Aborted(Exception):
    """The run stopped early (timeout, SIGTERM, too many errors), what it made deleted; `call`: the call refused."""

    def __init__(self, reason: str, detail: str, call: str = "") -> None:
        super().__init__(detail)
        self.reason, self.detail, self.call = reason, detail, call


@dataclass
class Context:
    run: events.RunSpec
    namespace: str
    deadline: float  # time.monotonic() when the run must be over (delete phase included)
    stop: threading.Event = field(default_factory=threading.Event)
    simulated: bool = False
    # the API has not been reached for a stall window (Kube.down: a watch or poll that keeps being refused): why
    api_down: Callable[[float], Aborted | None] = lambda _grace_s: None
    # close and list again the run's watches that delivered nothing (no event, no bookmark) for the given seconds:
    # True when one was (kubeapi.resync; a wait asks before it gives objects up or lets the run time out)
    resync: Callable[[float], bool] = lambda _quiet_s: False
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex)  # this execution's ANNOTATION_ATTEMPT

    @property
    def label(self) -> str:
        return run_label(self.run.run_id)

    def labels(self) -> dict[str, str]:
        return {**MANAGED, LABEL_KIND: KIND, LABEL_CAMPAIGN: self.run.campaign[:63], LABEL_RUN: self.label}

    def annotations(self) -> dict[str, str]:
        return {ANNOTATION_ATTEMPT: self.attempt}

    @property
    def selector(self) -> str:
        return f"{LABEL_RUN}={self.label}"

    def name(self, kind: str, i: int) -> str:
        return object_name(kind, self.run.campaign, self.run.run_id, i)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def stall_s(self) -> float:
        """The shortest a wait goes on without progress before it gives up on its stragglers (wait_for): a
        tenth of the run's timeout, at least 1 s; wait_for waits longer (patience) unless the run's end is
        that close."""
        return max(1.0, self.run.timeout_s / 10)

    def check(self) -> None:
        """Raise Aborted when stopped, the API unreachable for the stall window, or past the deadline."""
        if self.stop.is_set():
            raise Aborted("stopped", "the run was stopped before its next object (its campaign cancelled, SIGTERM or "
                          "shutdown) and what it created deleted")
        if (down := self.api_down(self.stall_s)) is not None:
            raise down
        if self.remaining() <= 0:
            raise Aborted("timeout", f"the run did not finish within {self.run.timeout_s:g} s")


def selector(campaign: str | None = None) -> str:
    """Label selector of every control-plane object podtax created (of one campaign)."""
    return f"{LABEL_KIND}={KIND}" + (f",{LABEL_CAMPAIGN}={campaign[:63]}" if campaign else "")


def pool(ctx: Context, fn: Callable[[T], Any], items: Iterable[T], workers: int) -> None:
    """Run fn over items with `workers` threads; stops handing out work once the run is stopped."""
    lock = threading.Lock()
    it = iter(items)
    errors: list[BaseException] = []

    def worker() -> None:
        while not ctx.stop.is_set() and ctx.remaining() > 0 and not errors:
            with lock:
                item = next(it, None)
            if item is None:
                return
            try:
                fn(item)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                errors.append(exc)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="podtax-cp") as ex:
        for f in [ex.submit(worker) for _ in range(workers)]:
            f.result()
    if errors:
        raise errors[0]
    ctx.check()


GIVE_UP_FLOOR_S = 10.0  # a wait gives up on its stragglers after at least this long without progress,
GIVE_UP_FACTOR = 3.0  # and at least this many times the slowest object of that wait so far


def patience(ctx: Context, slowest: float) -> float:
    """How long a wait goes on without progress before its stragglers count as stuck: the longest of the
    stall window, GIVE_UP_FLOOR_S and GIVE_UP_FACTOR times the slowest object the wait saw get through
    (`slowest`, seconds from the wait's start). A straggler slower than the other objects but not stuck
    is then timed (an audit: at timeout 20, claims planted to bind after 5 s were given up at 2.5 s, p99
    550 ms and 2 errors, where timeout 60 timed them: p99 5,036 ms)."""
    return max(ctx.stall_s, GIVE_UP_FLOOR_S, GIVE_UP_FACTOR * slowest)


def poll_safely(round_: Callable[[], None]) -> None:
    """One polling round; a failed round is logged and the next one tries again."""
    try:
        round_()
    except Exception as exc:  # noqa: BLE001 - transient API trouble must not end the poller
        log.warning("poll round failed: %s: %s", type(exc).__name__, exc)


def allowance(count: int) -> int:
    """How many of a run's `count` objects may fail before the run is aborted: max(10, 10 %)."""
    return max(10, count // 10)
