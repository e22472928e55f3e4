"""Lease leader election (coordination.k8s.io/v1), as client-go's leaderelection does it.

- The holder renews every `retry_period_s`; a candidate takes the lease only when it has not seen
  the lease record change for `lease_duration_s` (measured on its own monotonic clock, so clock
  skew between replicas does not matter).
- Writes carry the resourceVersion that was read: two candidates racing for an expired lease
  cannot both win (the loser gets 409 Conflict).
- The leader stops acting as leader when it has not renewed for `renew_deadline_s`, which is
  shorter than the lease duration, so its leadership ends before anyone else's can begin.
- On a clean shutdown the lease is released (holder emptied) so a standby takes over at once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from podtax_scheduler.kube import api_problem, drain, now_micro

log = logging.getLogger("podtax.scheduler.leader")


@dataclass(frozen=True)
class LeaseConfig:
    name: str = "benchmark-scheduler"
    namespace: str = "kube-system"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


class AlwaysLeader:
    """Leader election disabled: this replica is the only one."""

    def is_leader(self) -> bool:
        return True

    def start(self) -> None: ...

    def stop(self) -> None: ...


class LeaderElector:
    def __init__(self, api: client.ApiClient, identity: str, cfg: LeaseConfig,
                 on_change: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not cfg.retry_period_s < cfg.renew_deadline_s < cfg.lease_duration_s:
            raise ValueError("leader election needs retry period < renew deadline < lease duration")
        self.coord = client.CoordinationV1Api(api)
        self.identity = identity
        self.cfg = cfg
        self.on_change = on_change
        self.clock = clock
        self._renewed_at = -1e18  # monotonic time of our last successful acquire/renew
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._leader = False
        self._failing: str | None = None  # the problem last logged, until a round succeeds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ state

    def is_leader(self) -> bool:
        return self._leader and self.clock() - self._renewed_at < self.cfg.renew_deadline_s

    def _set_leader(self, value: bool) -> None:
        if value != self._leader:
            self._leader = value
            log.info("%s %s leadership of lease %s/%s", self.identity, "acquired" if value else "lost",
                     self.cfg.namespace, self.cfg.name)
            if self.on_change is not None:
                self.on_change(value)

    # ------------------------------------------------------------ API

    def _read(self) -> dict[str, Any] | None:
        try:
            resp = self.coord.read_namespaced_lease(self.cfg.name, self.cfg.namespace, _preload_content=False,
                                                    _request_timeout=5)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return json.loads(drain(resp))

    def _spec(self, transitions: int, acquire_time: str) -> dict[str, Any]:
        return {"holderIdentity": self.identity, "leaseDurationSeconds": max(1, int(round(self.cfg.lease_duration_s))),
                "acquireTime": acquire_time, "renewTime": now_micro(), "leaseTransitions": transitions}

    def try_acquire_or_renew(self) -> bool:
        """One round of the election; True when this replica holds the lease afterwards."""
        now = self.clock()
        lease = self._read()
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.cfg.name, "namespace": self.cfg.namespace},
                    "spec": self._spec(0, now_micro())}
            try:
                drain(self.coord.create_namespaced_lease(self.cfg.namespace, body, _preload_content=False,
                                                         _request_timeout=5))
            except ApiException as exc:
                if exc.status == 409:
                    return False
                raise
            self._renewed_at = now
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseTransitions"), spec.get("acquireTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.cfg.lease_duration_s)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False  # someone else holds a lease that has not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire = spec.get("acquireTime") or now_micro()
        if holder != self.identity:
            transitions += 1
            acquire = now_micro()
        lease["spec"] = self._spec(transitions, acquire)
        try:
            drain(self.coord.replace_namespaced_lease(self.cfg.name, self.cfg.namespace, lease,
                                                      _preload_content=False, _request_timeout=5))
        except ApiException as exc:
            if exc.status == 409:
                return False  # lost a race: someone else wrote first
            raise
        self._renewed_at = now
        return True

    def release(self) -> None:
        if not self._leader:
            return
        self._set_leader(False)
        try:
            lease = self._read()
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            drain(self.coord.replace_namespaced_lease(self.cfg.name, self.cfg.namespace, lease,
                                                      _preload_content=False, _request_timeout=5))
        except Exception as exc:  # noqa: BLE001 - best effort on the way out
            log.warning("could not release lease %s/%s: %s", self.cfg.namespace, self.cfg.name, api_problem(exc))

    # ------------------------------------------------------------ loop

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ok = self.try_acquire_or_renew()
            except Exception as exc:  # noqa: BLE001 - API trouble counts as a failed renewal
                problem = api_problem(exc)  # logged once while it lasts (again when it changes)
                said, self._failing = problem == self._failing, problem
                (log.debug if said else log.warning)("lease %s/%s: %s; retrying", self.cfg.namespace, self.cfg.name,
                                                      problem)
                ok = False
            else:
                if self._failing is not None:
                    log.info("lease %s/%s: the API server answers again", self.cfg.namespace, self.cfg.name)
                self._failing = None
            self._set_leader(ok or self.is_leader())
            self._stop.wait(self.cfg.retry_period_s if self._leader else self.cfg.retry_period_s / 2)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.release()
